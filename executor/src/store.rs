//! [`TaskStore`]: the wasmtime store of every instance that runs guest
//! code, which unmaps its windows (and seals what it left half made) before
//! the instance's memory is released.

use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};

use wasmtime::{AsContext, AsContextMut, Store, StoreContext, StoreContextMut};

use super::state::TaskState;
use crate::error::{ErrorKind, TaskError};
use crate::objects::Object;

/// A store whose windows are unmapped before it is dropped: use it for every
/// store that runs guest code.
pub struct TaskStore {
    store: ManuallyDrop<Store<TaskState>>,
}

impl TaskStore {
    /// Wraps `store`.
    pub fn new(store: Store<TaskState>) -> Self {
        Self {
            store: ManuallyDrop::new(store),
        }
    }

    /// Whether a window of this instance could not be given zero pages
    /// back (the instance must not be reused).
    pub fn is_tainted(&self) -> bool {
        self.store.data().windows.is_tainted()
    }
}

impl Deref for TaskStore {
    type Target = Store<TaskState>;
    fn deref(&self) -> &Store<TaskState> {
        &self.store
    }
}

impl DerefMut for TaskStore {
    fn deref_mut(&mut self) -> &mut Store<TaskState> {
        &mut self.store
    }
}

impl AsContext for TaskStore {
    type Data = TaskState;
    fn as_context(&self) -> StoreContext<'_, TaskState> {
        self.store.as_context()
    }
}

impl AsContextMut for TaskStore {
    fn as_context_mut(&mut self) -> StoreContextMut<'_, TaskState> {
        self.store.as_context_mut()
    }
}

impl Drop for TaskStore {
    fn drop(&mut self) {
        let state = self.store.data_mut();
        let abandoned = state.windows.unmap_all();
        for id in abandoned {
            let err = TaskError::new(
                ErrorKind::System,
                state.current.label.clone(),
                state.current.id,
                format!("object {id} was created but never sealed"),
            );
            state.node.objects().seal(id, Object::Error(err));
        }
        if state.windows.is_tainted() {
            // Its memory still shows an object: never let wasmtime reuse
            // the slot. What it holds is given back; the store is leaked.
            state.give_back();
            tracing::error!(
                task = %state.current.id,
                "an instance's memory could not be cleaned; its slot is retired"
            );
            return;
        }
        // SAFETY: dropped exactly once, here; never used again.
        unsafe { ManuallyDrop::drop(&mut self.store) };
    }
}
