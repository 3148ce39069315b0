/**
 * Whether this process's own scheduler is still starting: from the moment the process says it
 * starts one until that scheduler has first tried to take the lead. Meanwhile the lead its
 * predecessor left (an hour ago, yesterday) says nothing about the one starting now, so this
 * process's watchdog does not call the scheduler down for it (`idem dev` used to, for itself).
 */
export class SchedulerStart {
  #expected = false;
  #tried = false;

  /** This process is about to start a scheduler. */
  expect(): void {
    this.#expected = true;
  }

  /** The scheduler has tried to lead once (it leads, or stands by for another). */
  tried(): void {
    this.#tried = true;
  }

  get pending(): boolean {
    return this.#expected && !this.#tried;
  }
}
