/** Types of `shipped-agents.mjs`: which shipped agents are listed (gateway §7 "Operating"). */

/** The agent of SEC EDGAR company facts (`agents/sec-company`). */
export declare const SEC_COMPANY: 'holon-labs/sec-company';

/** The agent ids left out when `HOLON_EXCLUDE` is unset: summarize and sec-company. */
export declare const DEFAULT_EXCLUDE: readonly string[];

/** The agent ids `HOLON_EXCLUDE` names, or {@link DEFAULT_EXCLUDE} when it is unset. */
export declare function excludedAgents(env?: NodeJS.ProcessEnv): string[];

/** `HOLON_SEC_CONTACT`, trimmed, when it is an email address of at most 254 characters; else null. */
export declare function secContact(env?: NodeJS.ProcessEnv): string | null;

/** The ids not to list or serve: `exclude`, plus sec-company while `HOLON_SEC_CONTACT` holds no email address. */
export declare function leftOut(exclude: readonly string[], env?: NodeJS.ProcessEnv): string[];

/** The production refusal when sec-company is not excluded and has no contact; null when all is well. */
export declare function secContactProblem(env?: NodeJS.ProcessEnv): string | null;
