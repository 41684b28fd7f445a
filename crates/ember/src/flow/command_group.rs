//! The command group: what a task declares before it is submitted.

use super::graph::{Access, Mode as AccessMode};
use super::region::Misfit;
use super::{BufferId, FlowError, Region};

/// A task before it is submitted: its accesses and its kernel. See [`Flow::submit`](super::Flow::submit).
///
/// ```
/// use ember::flow::{Flow, Region};
/// # let pool = ember::Pool::builder().threads(1).build().unwrap();
/// let flow = Flow::new(&pool, Default::default());
/// let (a, b, c) = (flow.buffer([64, 64]), flow.buffer([64, 64]), flow.buffer([64]));
/// let rows = 0..16;
/// flow.submit(|cg| {
///     cg.read(&a, Region::transposed([rows.clone(), 0..64])) // columns 0..16 of `a`
///         .write(&b, Region::one_to_one([rows.clone(), 0..64])) // rows 0..16 of `b`
///         .read_write(&c, Region::all())
///         .label("transpose rows 0..16");
///     cg.run(|| { /* the kernel: touches the user's data */ });
/// })?;
/// flow.wait()?;
/// # Ok::<(), ember::flow::FlowError>(())
/// ```
pub struct CommandGroup {
    pub(super) flow: u64,
    pub(super) accesses: Vec<Access>,
    pub(super) error: Option<FlowError>,
    pub(super) kernel: Option<Box<dyn FnOnce() + Send + 'static>>,
    pub(super) label: Option<String>,
}

impl CommandGroup {
    /// Declares that the task reads `region` of `buffer`.
    pub fn read(&mut self, buffer: &BufferId, region: impl Into<Region>) -> &mut Self {
        self.access(buffer, region.into(), AccessMode::Read)
    }

    /// Declares that the task writes `region` of `buffer` (without reading it first).
    pub fn write(&mut self, buffer: &BufferId, region: impl Into<Region>) -> &mut Self {
        self.access(buffer, region.into(), AccessMode::Write)
    }

    /// Declares that the task reads and then writes `region` of `buffer`.
    pub fn read_write(&mut self, buffer: &BufferId, region: impl Into<Region>) -> &mut Self {
        self.access(buffer, region.into(), AccessMode::ReadWrite)
    }

    /// Names the task in traces (see [`PoolBuilder::trace`](crate::PoolBuilder::trace)).
    pub fn label(&mut self, label: impl Into<String>) -> &mut Self {
        self.label = Some(label.into());
        self
    }

    /// Sets the task's kernel. Without one the task runs nothing but is still ordered like
    /// any other (a barrier over its accesses).
    pub fn run(&mut self, kernel: impl FnOnce() + Send + 'static) {
        self.kernel = Some(Box::new(kernel));
    }

    fn access(&mut self, buffer: &BufferId, region: Region, mode: AccessMode) -> &mut Self {
        if self.error.is_some() {
            return self;
        }
        if buffer.flow != self.flow {
            self.error = Some(FlowError::ForeignBuffer { buffer: *buffer });
            return self;
        }
        match region.resolve(buffer.dims(), buffer.extent) {
            Ok(boxes) => self.accesses.push(Access {
                buffer: buffer.index,
                extent: buffer.extent,
                mode,
                boxes,
            }),
            Err(Misfit::Dimensions { region }) => {
                self.error = Some(FlowError::Dimensions {
                    buffer: *buffer,
                    region,
                })
            }
            Err(Misfit::OutOfBounds { region }) => {
                self.error = Some(FlowError::OutOfBounds {
                    buffer: *buffer,
                    region,
                })
            }
        }
        self
    }
}
