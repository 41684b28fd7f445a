//! ember's flow on many processes, over MPI.
//!
//! Every rank runs the same program. It builds its [`World`], a pool and a flow from the
//! world ([`World::flow`]), and submits the same command groups as every other rank; each
//! rank runs its share of every range and MPI moves exactly the regions a rank reads that
//! another rank last wrote. What each rank executes, what moves when, and why no rank waits
//! for data no rank sends: `ember/src/flow/README.md` and [`ember::flow::dist`].
//!
//! MPI is opt-in: without the `mpi` feature this crate needs no MPI library and a world has
//! one rank, so the same program runs as one process. With it (`--features mpi`, which
//! needs an MPI library and libclang to build) the program runs under `mpirun -n N`.
//!
//! ```
//! use ember::flow::{map, Buffer, FlowOptions};
//!
//! let world = ember_mpi::World::init().expect("MPI");
//! let pool = ember::Pool::builder().threads(2).build().unwrap();
//! let flow = world.flow(&pool, FlowOptions::default());
//! let n = 10;
//! let a = Buffer::new(&flow, [n], |[i]| i as f64);
//! let b = Buffer::new(&flow, [n], |_| 0.0);
//! flow.submit(|cg| {
//!     let a = a.read(cg, map::neighbourhood([1]));
//!     let b = b.write(cg, map::one_to_one());
//!     cg.parallel_for([n], move |chunk| {
//!         let (a, mut b) = (chunk.read(&a), chunk.write(&b));
//!         for [i] in chunk.items() {
//!             b[[i]] = a[[i.saturating_sub(1)]] + a[[(i + 1).min(n - 1)]];
//!         }
//!     });
//! })?;
//! // Every rank gets the whole buffer.
//! assert_eq!(flow.read_back(&b)?[3], 6.0);
//! # Ok::<(), ember::flow::FlowError>(())
//! ```
//!
//! # MPI threading level
//!
//! [`World::init`] asks for `MPI_THREAD_SERIALIZED` and refuses less: every MPI call is
//! made by one progress thread (posting `MPI_Isend`, taking what arrives with
//! `MPI_Improbe`/`MPI_Imrecv`, polling them with `MPI_Test`), except `MPI_Init_thread` and `MPI_Finalize` on the thread that makes and
//! drops the [`World`], and `MPI_Abort`; a lock keeps any two from overlapping.
//!
//! # Failure
//!
//! - A kernel that panics on any rank prints the panic's message with the rank and calls
//!   `MPI_Abort` (exit code 1 for every rank).
//! - A panic that unwinds through the frame that owns the [`World`], dropping it, ends the
//!   job the same way (the panic's message first): the other ranks would wait for this
//!   one. A panic caught before it reaches that frame (`std::panic::catch_unwind`) drops
//!   no world and ends nothing.
//! - Ranks that submit different command groups get
//!   [`FlowError::Diverged`](ember::flow::FlowError::Diverged) from `wait` or `read_back`;
//!   ranks that do not all make the same call there (one calls `read_back`, another `wait`
//!   or drops its flow) get
//!   [`FlowError::NotCollective`](ember::flow::FlowError::NotCollective). A world dropped
//!   while receives are still posted, or sends still unreceived, that no rank will match
//!   (ranks that diverged) aborts the job, saying which, once nothing has completed or
//!   arrived for 10 s (`EMBER_MPI_GIVE_UP_MS` sets it in milliseconds), rather than
//!   finalize with messages that will never arrive or hang there.
//! - Dropping a flow whose check passed, on a rank where no rank reported a lost task,
//!   waits for its messages, so a world dropped after its flows has none of theirs left. A
//!   flow dropped on a pool's worker does so on a thread of its own, and the world's drop
//!   waits for that thread, without limit, before it finalises MPI, as it would for a drop
//!   on its own thread (a slower rank's check or last round comes later, not never).
//!   A send or receive handed over after the world's drop began is refused and ends the
//!   job with a message, never dropped silently. Every rank makes its flows from the world in the same
//!   order: a flow's number, the same on every rank, keeps its messages apart from those of
//!   the world's other flows.
//! - A flow used or dropped after its world (which finalised MPI) ends its process, saying
//!   so: MPI may not be called, not even `MPI_Abort`, once it is finalised.

#[cfg(feature = "mpi")]
use std::sync::Arc;

use ember::flow::{Flow, FlowOptions};
use ember::Pool;

#[cfg(feature = "mpi")]
mod transport;

/// Why [`World::init`] failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum InitError {
    /// MPI was initialised already (by this or another library).
    AlreadyInitialized,
    /// The MPI library gives less than `MPI_THREAD_SERIALIZED`; `provided` is what it gives.
    Threading {
        /// The level the library offered.
        provided: String,
    },
}

impl std::fmt::Display for InitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InitError::AlreadyInitialized => write!(f, "MPI is initialised already"),
            InitError::Threading { provided } => write!(
                f,
                "ember-mpi needs MPI_THREAD_SERIALIZED; this MPI library provides {provided}"
            ),
        }
    }
}

impl std::error::Error for InitError {}

/// This process's place in the job: its rank, how many there are, and (with the `mpi`
/// feature) MPI itself, finalised when the world is dropped. Make one per process, first,
/// and drop it last (after every flow made from it).
pub struct World {
    rank: usize,
    ranks: usize,
    #[cfg(feature = "mpi")]
    mpi: transport::MpiWorld,
}

impl World {
    /// Starts MPI with `MPI_THREAD_SERIALIZED` (feature `mpi`; a process not started by
    /// `mpirun` is a job of one rank), or, without the feature, a world of one rank.
    ///
    /// ```
    /// let world = ember_mpi::World::init().unwrap();
    /// assert!(world.rank() < world.ranks());
    /// ```
    pub fn init() -> Result<World, InitError> {
        #[cfg(feature = "mpi")]
        {
            let mpi = transport::MpiWorld::init()?;
            Ok(World {
                rank: mpi.transport.rank_index(),
                ranks: mpi.transport.size(),
                mpi,
            })
        }
        #[cfg(not(feature = "mpi"))]
        {
            Ok(World { rank: 0, ranks: 1 })
        }
    }

    /// This process's rank, `0..ranks()`.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// How many ranks run the program.
    pub fn ranks(&self) -> usize {
        self.ranks
    }

    /// Whether the world runs over MPI (the `mpi` feature).
    pub fn is_mpi(&self) -> bool {
        cfg!(feature = "mpi")
    }

    /// A flow on `pool` that runs on every rank of the world: a distributed flow over MPI
    /// (feature `mpi`), a one-process flow otherwise.
    ///
    /// ```
    /// # let world = ember_mpi::World::init().unwrap();
    /// # let pool = ember::Pool::builder().threads(1).build().unwrap();
    /// let flow = world.flow(&pool, Default::default());
    /// assert_eq!(flow.rank(), (world.rank(), world.ranks()));
    /// ```
    pub fn flow(&self, pool: &Pool, options: FlowOptions) -> Flow {
        #[cfg(feature = "mpi")]
        {
            let transport: Arc<dyn ember::flow::dist::Transport> = self.mpi.transport.clone();
            Flow::distributed(pool, options, transport)
        }
        #[cfg(not(feature = "mpi"))]
        {
            Flow::new(pool, options)
        }
    }

    /// Ends the whole job with `message` and a non-zero exit: `MPI_Abort` over MPI,
    /// [`std::process::exit`] otherwise.
    pub fn abort(&self, message: &str) -> ! {
        let line = format!("rank {}: {message}; ending the job\n", self.rank);
        // One write, so that the lines of ranks that end at once do not interleave.
        let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
        #[cfg(feature = "mpi")]
        self.mpi.transport.abort_job();
        #[allow(unreachable_code)]
        std::process::exit(1)
    }
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("rank", &self.rank)
            .field("ranks", &self.ranks)
            .field("mpi", &self.is_mpi())
            .finish()
    }
}

/// A pool sized for one rank among `ranks` on this machine: the machine's cores divided
/// among the ranks (at least one worker each), or `EMBER_NUM_THREADS` if set.
///
/// ```
/// let pool = ember_mpi::rank_pool(2);
/// assert!(pool.threads() >= 1);
/// ```
pub fn rank_pool(ranks: usize) -> Pool {
    let threads = std::env::var("EMBER_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            (cores / ranks.max(1)).max(1)
        });
    Pool::builder()
        .threads(threads.max(1))
        .name("rank")
        .build()
        .expect("a pool of at least one thread")
}
