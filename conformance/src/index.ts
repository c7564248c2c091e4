/**
 * The kit as a library, for a binding's own test suite: run the checks and render the reports
 * the command line writes. `runConformance` documents its errors; the report's shape is
 * `ConformanceReport`.
 */
export { CHECKS } from './checks/index.ts';
export type { Check, CheckResult, Failure, Level, Outcome, SectionName } from './check.ts';
export { ConfigError, loadConfig, parseConfig, type Access, type ClientTls, type ConformanceConfig, type TlsFiles } from './config.ts';
export { CONTRACT_VERSION } from './contract.ts';
export { CONFIG_TEMPLATE, writeConfigTemplate } from './init.ts';
export { toJunit } from './report/junit.ts';
export { formatFailure, formatProgress, formatReport } from './report/text.ts';
export {
  BindingUnreachable, NotABinding, runConformance, selectChecks,
  type ConformanceReport, type ProgressEvent, type RunOptions, type Totals,
} from './runner.ts';
