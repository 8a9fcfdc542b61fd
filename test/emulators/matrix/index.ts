export {
  type Call,
  type Fault,
  MatrixEmulator,
  type MatrixEmulatorOptions,
  type Operation,
  type ShownEvent,
  startMatrixEmulator,
} from "./emulator.ts";
export type { MatrixEventJson, Membership } from "./world.ts";
