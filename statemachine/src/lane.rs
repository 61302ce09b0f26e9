//! A dedicated thread for one kind of storage work.
//!
//! The Raft log's and the state machine's redb transactions (each ending in
//! an fsync) used to run on tokio's blocking pool, next to every store read
//! of the API and the controllers. That pool grows to hundreds of threads
//! under load, and each thread keeps its allocator heap; bounding it would
//! queue the fsync'd work behind reads. A lane gives that work threads of its
//! own, in submission order, so the shared pool can be bounded.

use std::panic::AssertUnwindSafe;
use std::sync::{mpsc, Arc, Mutex};

use openraft::{ErrorSubject, ErrorVerb, StorageIOError};

use crate::raft_types::StorageError;

/// One unit of work for a lane's thread.
type Job = Box<dyn FnOnce() + Send>;

/// Why a job handed to a lane did not run to the end.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaneError {
    /// The operating system would not start the lane's thread.
    #[error("cannot start the storage thread {name}: {detail}")]
    CannotStart { name: String, detail: String },
    /// The lane's thread is gone (it could not start or has stopped).
    #[error("storage thread {0} is not running")]
    Stopped(String),
    /// The job panicked; the lane goes on with the next one.
    #[error("storage work on thread {0} panicked")]
    Panicked(String),
}

/// Named threads running the jobs handed to them: one thread runs them one
/// at a time in order; more share one queue (for reads, where order does
/// not matter and one slow job must not hold up the rest). They stop when
/// the last handle to the lane is dropped.
#[derive(Debug, Clone)]
pub struct Lane {
    /// Shared by the clones a storage call makes of its store.
    name: Arc<str>,
    jobs: mpsc::Sender<Job>,
}

impl Lane {
    /// Starts a lane of one thread: jobs run in the order handed over.
    pub fn start(name: &str) -> Result<Lane, LaneError> {
        Lane::start_shared(name, 1)
    }

    /// Starts a lane of `threads` threads taking jobs from one queue.
    pub fn start_shared(name: &str, threads: usize) -> Result<Lane, LaneError> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        for i in 0..threads.max(1) {
            let queue = queue.clone();
            let thread_name = if threads > 1 { format!("{name}-{i}") } else { name.to_string() };
            std::thread::Builder::new()
                .name(thread_name)
                .spawn(move || loop {
                    // One thread waits for the next job at a time; it lets go
                    // of the queue before running it.
                    let next = queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).recv();
                    match next {
                        Ok(job) => job(),
                        Err(_) => return,
                    }
                })
                .map_err(|e| LaneError::CannotStart { name: name.to_string(), detail: e.to_string() })?;
        }
        Ok(Lane { name: name.into(), jobs })
    }

    /// Runs `f` on the lane's thread after the jobs before it, and returns
    /// its result.
    pub async fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> Result<T, LaneError> {
        self.submit(f)?.await
    }

    /// Hands `f` to the lane now (it runs after the jobs handed over
    /// before it, whether or not the result is awaited) and returns its
    /// result to come.
    pub fn submit<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<impl std::future::Future<Output = Result<T, LaneError>> + Send + 'static, LaneError> {
        let (done, result) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            // A panic drops `done` unanswered; the receiver reports it.
            if let Ok(value) = std::panic::catch_unwind(AssertUnwindSafe(f)) {
                let _ = done.send(value);
            }
        });
        self.jobs.send(job).map_err(|_| LaneError::Stopped(self.name.to_string()))?;
        let name = self.name.clone();
        Ok(async move { result.await.map_err(|_| LaneError::Panicked(name.to_string())) })
    }

    /// Runs storage work `f` on the lane, reporting any failure (its own, a
    /// panic, a stopped lane) as openraft's storage error on `subject`.
    pub async fn run_io<T, E>(
        &self,
        subject: ErrorSubject<u64>,
        verb: ErrorVerb,
        f: impl FnOnce() -> Result<T, E> + Send + 'static,
    ) -> Result<T, StorageError>
    where
        T: Send + 'static,
        E: std::fmt::Display + Send + 'static,
    {
        let failed = |e: &dyn std::fmt::Display| StorageError::IO {
            source: StorageIOError::new(subject, verb, openraft::AnyError::error(e.to_string())),
        };
        match self.run(f).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(failed(&e)),
            Err(e) => Err(failed(&e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn jobs_run_in_order_on_the_lanes_own_thread() {
        let lane = Lane::start("test-lane").unwrap();
        let order = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        // A current-thread runtime polls the tasks in the order spawned, so
        // the jobs are handed over in that order.
        let mut runs = Vec::new();
        for i in 0..20 {
            let (lane, order) = (lane.clone(), order.clone());
            runs.push(tokio::spawn(async move {
                lane.run(move || {
                    order.lock().unwrap().push(i);
                    std::thread::current().name().map(str::to_string)
                })
                .await
            }));
        }
        for run in runs {
            assert_eq!(run.await.unwrap().unwrap().as_deref(), Some("test-lane"));
        }
        assert_eq!(*order.lock().unwrap(), (0..20).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn a_shared_lane_runs_a_job_while_another_is_held_up() {
        let lane = Lane::start_shared("shared", 2).unwrap();
        let (release, held) = std::sync::mpsc::channel::<()>();
        let slow = {
            let lane = lane.clone();
            tokio::spawn(async move { lane.run(move || held.recv().is_ok()).await })
        };
        // Answered by the second thread while the first waits.
        assert_eq!(lane.run(|| 5).await, Ok(5));
        release.send(()).unwrap();
        assert_eq!(slow.await.unwrap(), Ok(true));
    }

    #[tokio::test]
    async fn a_panicking_job_is_reported_and_the_lane_goes_on() {
        let lane = Lane::start("panicky").unwrap();
        let failed = lane.run(|| -> u32 { panic!("boom") }).await;
        assert_eq!(failed, Err(LaneError::Panicked("panicky".into())));
        assert_eq!(lane.run(|| 7).await, Ok(7));
    }
}
