export {
  BUTTONS_FIELD,
  createMatrixAdapter,
  MATRIX_MAX_MESSAGE_CHARS,
  MATRIX_MAX_UPLOAD_BYTES,
  MatrixAdapter,
  type MatrixAdapterOptions,
  type PromptButton,
} from "./adapter.ts";
export { MatrixClient, type MatrixEvent, type SyncResponse } from "./client.ts";
export { type MatrixConfig, type MatrixConfigInput, matrixConfigSchema } from "./config.ts";
export { toSwitchboardError } from "./errors.ts";
export { htmlToPlain, matrixDialect, sanitizeMatrixHtml, toMatrixContent } from "./format.ts";
export { decodeTarget, encodeTarget, type MatrixTarget, txnIdFor } from "./keys.ts";
export { type ParseContext, type ParseOutcome, parseMatrixEvent } from "./parse.ts";
