//! The import's threads at a lower priority (`nice`, `SCHED_IDLE`), Linux only.

/// Sets the calling thread's nice value (Linux: per thread, inherited by the threads it
/// starts afterwards).
#[cfg(target_os = "linux")]
pub(crate) fn set_thread_nice(nice: i32) -> std::io::Result<()> {
    rustix::process::setpriority_process(Some(rustix::thread::gettid()), nice)
        .map_err(std::io::Error::from)
}

/// Puts the calling thread under `SCHED_IDLE` (Linux: per thread, inherited by the threads it
/// starts afterwards).
#[cfg(target_os = "linux")]
pub(crate) fn set_thread_idle() -> std::io::Result<()> {
    use thread_priority::unix::{
        set_thread_priority_and_policy, thread_native_id, NormalThreadSchedulePolicy,
        ThreadSchedulePolicy,
    };
    let idle = ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle);
    match set_thread_priority_and_policy(
        thread_native_id(),
        thread_priority::ThreadPriority::Min,
        idle,
    ) {
        Ok(()) => Ok(()),
        // The crate sets the policy, then the nice value (to 0), which an unprivileged thread
        // with a higher inherited nice may not do (EACCES); nice means nothing under
        // SCHED_IDLE, so the policy is what counts.
        Err(_) if thread_priority::unix::thread_schedule_policy().ok() == Some(idle) => Ok(()),
        Err(e) => Err(std::io::Error::other(format!("{e:?}"))),
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn set_thread_idle() -> std::io::Result<()> {
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn set_thread_nice(_nice: i32) -> std::io::Result<()> {
    Ok(())
}
