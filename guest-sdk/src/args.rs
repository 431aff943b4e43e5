//! Task arguments: what `.remote(..)` accepts ([`IntoArg`]) and how the
//! generated code reads them back inside the task ([`ArgReader`]).

use crate::actor::{Actor, ActorHandle};
use crate::bindings::{objects, types as wit};
use crate::codec::{encode_as, from_payload, Format, Value};
use crate::error::ErrorKind;
use crate::object_ref::ObjectRef;
use crate::runtime::task_error;

/// Something that can be passed where a remote function or actor method takes
/// a `T`: a `T` itself (passed by value), or an [`ObjectRef<T>`] /
/// `&ObjectRef<T>` (a dependency the host resolves before the task runs).
/// Where the parameter is itself a ref (`ObjectRef<T>` or
/// `ActorHandle<A>`), a `&` to one passes a copy of it. A `&str` is
/// accepted where a `String` is expected.
pub trait IntoArg<T> {
    /// Converts `self` into a WIT argument, a value encoded in `format`.
    ///
    /// # Panics
    ///
    /// When the value cannot be serialized (a bug in the caller: a map
    /// with non-string keys in JSON, say).
    #[doc(hidden)]
    fn into_arg(self, format: Format) -> wit::Arg;
}

impl<T: Value> IntoArg<T> for T {
    fn into_arg(self, format: Format) -> wit::Arg {
        value_arg(&self, format)
    }
}

impl<T> IntoArg<T> for ObjectRef<T> {
    fn into_arg(self, _: Format) -> wit::Arg {
        // Kept alive until the submission has reached the host.
        crate::refs::defer(&[self.id()]);
        wit::Arg::Object(self.id().into())
    }
}

impl<T> IntoArg<T> for &ObjectRef<T> {
    fn into_arg(self, _: Format) -> wit::Arg {
        wit::Arg::Object(self.id().into())
    }
}

impl<T: Value> IntoArg<ObjectRef<T>> for &ObjectRef<T> {
    fn into_arg(self, format: Format) -> wit::Arg {
        value_arg(self, format)
    }
}

impl<A: Actor> IntoArg<ActorHandle<A>> for &ActorHandle<A> {
    fn into_arg(self, format: Format) -> wit::Arg {
        value_arg(self, format)
    }
}

impl IntoArg<String> for &str {
    fn into_arg(self, format: Format) -> wit::Arg {
        value_arg(&self.to_string(), format)
    }
}

fn value_arg<T: Value>(value: &T, format: Format) -> wit::Arg {
    match encode_as(value, format.into()) {
        Ok(payload) => wit::Arg::Value(payload),
        Err(e) => panic!("wray: could not encode an argument: {e}"),
    }
}

/// Reads the arguments of one task in order, decoding each as its parameter's
/// type. Used by the code `#[wray::remote]` and `#[wray::actor]` generate.
#[doc(hidden)]
pub struct ArgReader {
    function: &'static str,
    args: std::vec::IntoIter<wit::Arg>,
    index: usize,
}

impl ArgReader {
    /// Checks that `function` got exactly `expected` arguments.
    ///
    /// # Errors
    ///
    /// Kind `invalid-argument` when the count differs.
    pub fn new(
        function: &'static str,
        args: Vec<wit::Arg>,
        expected: usize,
    ) -> Result<Self, wit::TaskError> {
        if args.len() != expected {
            return Err(task_error(
                ErrorKind::InvalidArgument,
                function,
                format!(
                    "{function} takes {expected} argument(s), got {}",
                    args.len()
                ),
            ));
        }
        Ok(ArgReader {
            function,
            args: args.into_iter(),
            index: 0,
        })
    }

    /// Decodes the next argument as a `T`; an object argument is fetched
    /// from the store first.
    ///
    /// # Errors
    ///
    /// Kind `invalid-argument` naming the function and the argument's index
    /// when the value is not a `T`; the object's own error, unchanged, when an
    /// object argument holds one.
    pub fn arg<T: Value>(&mut self) -> Result<T, wit::TaskError> {
        let index = self.index;
        self.index += 1;
        let payload = match self.args.next() {
            Some(wit::Arg::Value(payload)) => payload,
            Some(wit::Arg::Object(id)) => {
                // A large object is mapped and decoded in place (one copy);
                // a small one is fetched.
                if let Some(decoded) = crate::mapped::decode_in_place::<T>(id)? {
                    return decoded.map_err(|e| self.invalid(index, e));
                }
                let mut payloads = objects::get(&[id], None)?;
                match payloads.pop() {
                    Some(payload) if payloads.is_empty() => payload,
                    _ => {
                        return Err(task_error(
                            ErrorKind::System,
                            self.function,
                            format!("argument {index}: the host returned no single value"),
                        ))
                    }
                }
            }
            None => {
                return Err(task_error(
                    ErrorKind::InvalidArgument,
                    self.function,
                    format!("argument {index} is missing"),
                ))
            }
        };
        from_payload(payload).map_err(|e| self.invalid(index, e))
    }

    /// The error of argument `index`, which is not a value of its
    /// parameter's type (`message` says why).
    fn invalid(&self, index: usize, message: String) -> wit::TaskError {
        task_error(
            ErrorKind::InvalidArgument,
            self.function,
            format!("argument {index} of {}: {message}", self.function),
        )
    }
}
