//! [`ObjectRef`]: a typed name for an object in the store.

use core::fmt;
use core::hash::{Hash, Hasher};
use core::marker::PhantomData;
use core::time::Duration;

use rkyv::rancor::Fallible;
use rkyv::{Archive, Deserialize, Place, Serialize};

use crate::codec::Value;
use crate::error::Result;
use crate::ids::{ArchivedObjectId, ObjectId, ObjectIdResolver};
use crate::refs;

/// A reference to an immutable object of type `T` in the object store: a
/// task's return value or a value stored with [`put`](crate::put).
///
/// Passing an `ObjectRef<T>` (or `&ObjectRef<T>`) where a remote function
/// takes a `T` makes the task depend on the object: the host runs the task
/// once the object exists and hands it the value. An `ObjectRef<T>` inside a
/// value (a `Vec<ObjectRef<T>>`, say) travels as a reference, unresolved,
/// just as in Ray; it is archived as its [`ObjectId`] alone.
pub struct ObjectRef<T> {
    id: ObjectId,
    _type: PhantomData<fn() -> T>,
}

impl<T> ObjectRef<T> {
    /// Wraps an object id, e.g. one received from the HTTP API. The type is
    /// not checked until the object is read. The ref counts as a live
    /// reference to the object (see [`Clone`] and [`Drop`] below).
    pub fn from_id(id: ObjectId) -> Self {
        refs::acquire(id);
        ObjectRef {
            id,
            _type: PhantomData,
        }
    }

    /// The object's id.
    pub const fn id(&self) -> ObjectId {
        self.id
    }
}

impl<T: Value> ObjectRef<T> {
    /// Blocks until the object exists and returns its value. Same as
    /// [`wray::get`](crate::get).
    ///
    /// # Errors
    ///
    /// The error of the task that produced the object (or of the first task
    /// in its chain of dependencies that failed), or kind
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) when the value
    /// is not a `T`.
    pub fn get(&self) -> Result<T> {
        crate::get(self)
    }

    /// Like [`get`](Self::get), but gives up after `timeout`. Same as
    /// [`wray::get_timeout`](crate::get_timeout).
    ///
    /// # Errors
    ///
    /// As [`get`](Self::get), plus kind [`Timeout`](crate::ErrorKind::Timeout)
    /// when the object does not exist within `timeout`.
    pub fn get_timeout(&self, timeout: Duration) -> Result<T> {
        crate::get_timeout(self, timeout)
    }
}

/// A clone is one more live reference: the object stays in the store while
/// any `ObjectRef` to it is alive in any task (Ray's reference counting).
impl<T> Clone for ObjectRef<T> {
    fn clone(&self) -> Self {
        ObjectRef::from_id(self.id)
    }
}

/// Dropping the last `ObjectRef` to an object in this task tells the host,
/// which frees the object once nothing else holds it.
impl<T> Drop for ObjectRef<T> {
    fn drop(&mut self) {
        refs::release(self.id);
    }
}

impl<T> PartialEq for ObjectRef<T> {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl<T> Eq for ObjectRef<T> {}

impl<T> Hash for ObjectRef<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

impl<T> fmt::Debug for ObjectRef<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectRef({})", self.id)
    }
}

impl<T> From<&ObjectRef<T>> for ObjectId {
    fn from(r: &ObjectRef<T>) -> Self {
        r.id
    }
}

// An `ObjectRef<T>` is archived as its `ObjectId`, whatever `T` is.

impl<T> Archive for ObjectRef<T> {
    type Archived = ArchivedObjectId;
    type Resolver = ObjectIdResolver;

    fn resolve(&self, resolver: Self::Resolver, out: Place<Self::Archived>) {
        self.id.resolve(resolver, out);
    }
}

impl<T, S> Serialize<S> for ObjectRef<T>
where
    S: Fallible + ?Sized,
    ObjectId: Serialize<S>,
{
    fn serialize(&self, serializer: &mut S) -> core::result::Result<Self::Resolver, S::Error> {
        refs::note_serialized(self.id);
        self.id.serialize(serializer)
    }
}

impl<T, D> Deserialize<ObjectRef<T>, D> for ArchivedObjectId
where
    D: Fallible + ?Sized,
    ArchivedObjectId: Deserialize<ObjectId, D>,
{
    fn deserialize(&self, deserializer: &mut D) -> core::result::Result<ObjectRef<T>, D::Error> {
        let id: ObjectId = Deserialize::<ObjectId, D>::deserialize(self, deserializer)?;
        Ok(ObjectRef::from_id(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::TaskId;

    #[test]
    fn refs_inside_values_round_trip_as_ids() {
        let refs: Vec<ObjectRef<i64>> = (1..=3)
            .map(|i| {
                ObjectRef::from_id(ObjectId {
                    task: TaskId { hi: 7, lo: 9 },
                    index: i,
                })
            })
            .collect();
        let bytes = refs.encode().expect("encode");
        let back = Vec::<ObjectRef<i64>>::decode(&bytes).expect("decode");
        assert_eq!(back, refs);
    }

    #[test]
    fn clones_and_drops_are_counted_and_encoding_collects_refs() {
        let id = ObjectId {
            task: TaskId { hi: 1, lo: 2 },
            index: 5,
        };
        let a: ObjectRef<i64> = ObjectRef::from_id(id);
        let b = a.clone();
        assert_eq!(crate::refs::count(id), 2);
        let payload = crate::codec::to_payload(&vec![b]).expect("encode");
        assert_eq!(payload.refs.len(), 1);
        // The vector was encoded and dropped; the encoding keeps its ref
        // alive until the host has it.
        assert_eq!(crate::refs::count(id), 2);
        crate::refs::flush_deferred();
        assert_eq!(crate::refs::count(id), 1);
        drop(a);
        assert_eq!(crate::refs::count(id), 0);
    }
}
