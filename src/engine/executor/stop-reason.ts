import { ErrorClass, isErrorClass } from "../../core/model/error-classes.ts";

/**
 * Why an attempt is being stopped from outside: the abort reason of its cancel signal. The
 * worker aborts with an Error named after the error class to record (`Cancelled` when it shuts
 * down and hands the attempt back, `LeaseLost` when the attempt is no longer its own).
 */
export function stopReason(signal: AbortSignal): { errorClass: ErrorClass; message: string } {
  const reason = signal.reason;
  if (reason instanceof Error && isErrorClass(reason.name)) return { errorClass: reason.name, message: reason.message };
  return { errorClass: ErrorClass.Cancelled, message: "cancelled: worker is shutting down" };
}

export function stopError(errorClass: ErrorClass, message: string): Error {
  const error = new Error(message);
  error.name = errorClass;
  return error;
}
