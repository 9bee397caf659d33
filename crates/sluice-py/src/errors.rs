//! One Python exception per Rust error variant. The classes live in `sluice/_errors.py` (so
//! that they can also be `ValueError`s or `OSError`s); this module picks the class and its
//! attributes for each variant of [`sluice::Error`] and [`ImportError`].

use pyo3::prelude::*;
use pyo3::types::PyDict;
use sluice_import::{ImportError, OtherRow, RowPlace};

/// What a binding call can fail with before it becomes a Python exception (built without the
/// GIL, converted with it).
#[derive(Debug)]
pub enum Failure {
    /// The engine failed.
    Engine(sluice::Error),
    /// The import crate failed (an import, a catalog read, a table get).
    Import(ImportError),
    /// The Db (or the handle) was closed.
    Closed(&'static str),
    /// A bad argument found by the bindings themselves.
    InvalidArgument(String),
}

impl From<sluice::Error> for Failure {
    fn from(e: sluice::Error) -> Self {
        Failure::Engine(e)
    }
}

impl From<ImportError> for Failure {
    fn from(e: ImportError) -> Self {
        match e {
            ImportError::Db(e) => Failure::Engine(e),
            e => Failure::Import(e),
        }
    }
}

/// Attributes of an exception, set after it is built.
type Attrs<'py> = Vec<(&'static str, Bound<'py, PyAny>)>;

fn obj<'py, T: pyo3::IntoPyObjectExt<'py>>(py: Python<'py>, v: T) -> Bound<'py, PyAny> {
    v.into_bound_py_any(py)
        .unwrap_or_else(|_| py.None().into_bound(py))
}

/// Builds `sluice.<class>(*args)` and sets `attrs` on it.
fn build<'py>(
    py: Python<'py>,
    class: &str,
    args: Bound<'py, pyo3::types::PyTuple>,
    attrs: Attrs<'py>,
) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let cls = py.import("sluice._errors")?.getattr(class)?;
        let exc = cls.call1(args)?;
        for (k, v) in attrs {
            exc.setattr(k, v)?;
        }
        Ok(PyErr::from_value(exc))
    })();
    made.unwrap_or_else(|e| e)
}

fn simple<'py>(py: Python<'py>, class: &str, msg: String, attrs: Attrs<'py>) -> PyErr {
    let args = pyo3::types::PyTuple::new(py, [msg]).expect("tuple of one string");
    build(py, class, args, attrs)
}

/// An `OSError` subclass built as `cls(errno, strerror, filename)`, so that `errno`,
/// `strerror` and `filename` are set as Python sets them.
fn os_error(
    py: Python<'_>,
    class: &str,
    path: Option<&std::path::Path>,
    source: &std::io::Error,
    message: String,
) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let errors = py.import("sluice._errors")?;
        let errno = errors
            .getattr("_errno_of")?
            .call1((source.raw_os_error(), format!("{:?}", source.kind())))?;
        let filename = path.map(|p| p.to_string_lossy().into_owned());
        let exc = errors
            .getattr(class)?
            .call1((errno, source.to_string(), filename))?;
        exc.setattr("message", message)?;
        Ok(PyErr::from_value(exc))
    })();
    made.unwrap_or_else(|e| e)
}

fn engine_error(py: Python<'_>, e: &sluice::Error) -> PyErr {
    let msg = e.to_string();
    match e {
        sluice::Error::Io { path, source } => {
            let class = if source.kind() == std::io::ErrorKind::WouldBlock
                && source.to_string().contains("locked")
            {
                "LockedError"
            } else {
                "IoError"
            };
            os_error(py, class, path.as_deref(), source, msg)
        }
        sluice::Error::Corruption {
            file,
            offset,
            reason,
        } => simple(
            py,
            "CorruptionError",
            msg,
            vec![
                ("file", obj(py, file.to_string_lossy().into_owned())),
                ("offset", obj(py, *offset)),
                ("reason", obj(py, reason.clone())),
            ],
        ),
        sluice::Error::InvalidArgument(_) => simple(py, "InvalidArgumentError", msg, vec![]),
        sluice::Error::KeyOrder { previous, key } => simple(
            py,
            "KeyOrderError",
            msg,
            vec![
                ("previous", obj(py, pyo3::types::PyBytes::new(py, previous))),
                ("key", obj(py, pyo3::types::PyBytes::new(py, key))),
            ],
        ),
        sluice::Error::NotSupported(_) => simple(py, "NotSupportedError", msg, vec![]),
        sluice::Error::Poisoned(_) => simple(py, "PoisonedError", msg, vec![]),
        _ => simple(py, "Error", msg, vec![]),
    }
}

fn place_attrs<'py>(py: Python<'py>, place: &RowPlace) -> Attrs<'py> {
    vec![
        ("file", obj(py, place.file.clone())),
        ("line", obj(py, place.line)),
    ]
}

fn other_row<'py>(py: Python<'py>, other: &OtherRow) -> Bound<'py, PyAny> {
    obj(py, other.to_string())
}

fn import_error(py: Python<'_>, e: &ImportError) -> PyErr {
    let msg = e.to_string();
    match e {
        ImportError::Schema(s) => simple(
            py,
            "SchemaError",
            msg,
            vec![
                ("line", obj(py, (s.line > 0).then_some(s.line))),
                ("column", obj(py, (s.column > 0).then_some(s.column))),
                ("reason", obj(py, s.message.clone())),
            ],
        ),
        ImportError::InvalidOption { option, .. } => simple(
            py,
            "InvalidArgumentError",
            msg,
            vec![("option", obj(py, *option))],
        ),
        ImportError::InvalidArgument(_) => simple(py, "InvalidArgumentError", msg, vec![]),
        ImportError::Catalog(_) => simple(py, "CatalogError", msg, vec![]),
        ImportError::BadRow(b) => {
            let mut attrs = place_attrs(py, &b.place);
            attrs.push(("column", obj(py, b.column.clone())));
            attrs.push(("value", obj(py, b.value.clone())));
            attrs.push(("reason", obj(py, b.reason.clone())));
            simple(py, "BadRowError", msg, attrs)
        }
        ImportError::DuplicateKey { place, key, other } => {
            let mut attrs = place_attrs(py, place);
            attrs.push(("key", obj(py, key.clone())));
            attrs.push(("other", other_row(py, other)));
            simple(py, "DuplicateKeyError", msg, attrs)
        }
        ImportError::UniqueViolation {
            place,
            index,
            value,
            other,
        } => {
            let mut attrs = place_attrs(py, place);
            attrs.push(("index", obj(py, index.clone())));
            attrs.push(("value", obj(py, value.clone())));
            attrs.push(("other", other_row(py, other)));
            simple(py, "UniqueViolationError", msg, attrs)
        }
        ImportError::TooManyErrors { count, last } => {
            let last_exc = import_error(py, last);
            let last_obj = last_exc.value(py).clone().into_any();
            let (file, line) = match last_obj
                .getattr("file")
                .ok()
                .zip(last_obj.getattr("line").ok())
            {
                Some((f, l)) => (f, l),
                None => (py.None().into_bound(py), py.None().into_bound(py)),
            };
            let err = simple(
                py,
                "TooManyErrorsError",
                msg,
                vec![
                    ("count", obj(py, *count)),
                    ("last", last_obj),
                    ("file", file),
                    ("line", line),
                ],
            );
            err.set_cause(py, Some(last_exc));
            err
        }
        ImportError::Io { path, source } => os_error(py, "IoError", Some(path), source, msg),
        ImportError::DiskFull {
            dir,
            needed,
            available,
            kept,
            source,
        } => {
            let err = os_error(py, "DiskFullError", Some(dir), source, msg);
            let v = err.value(py);
            for (k, n) in [("needed", needed), ("available", available), ("kept", kept)] {
                let _ = v.setattr(k, *n);
            }
            err
        }
        ImportError::CannotResume { dir, reason } => simple(
            py,
            "CannotResumeError",
            msg,
            vec![
                ("dir", obj(py, dir.to_string_lossy().into_owned())),
                ("reason", obj(py, reason.clone())),
            ],
        ),
        ImportError::Db(e) => engine_error(py, e),
        ImportError::Internal(_) => simple(py, "InternalError", msg, vec![]),
        _ => simple(py, "Error", msg, vec![]),
    }
}

impl Failure {
    /// The Python exception for this failure.
    pub fn into_pyerr(self, py: Python<'_>) -> PyErr {
        match self {
            Failure::Engine(e) => engine_error(py, &e),
            Failure::Import(e) => import_error(py, &e),
            Failure::Closed(what) => simple(py, "ClosedError", format!("{what} is closed"), vec![]),
            Failure::InvalidArgument(m) => simple(py, "InvalidArgumentError", m, vec![]),
        }
    }
}

/// Runs `f` without the GIL (so other Python threads run meanwhile) and converts its failure.
pub fn detached<T, F>(py: Python<'_>, f: F) -> PyResult<T>
where
    F: FnOnce() -> Result<T, Failure> + Send,
    T: Send,
{
    py.detach(f).map_err(|e| e.into_pyerr(py))
}

/// An `InvalidArgumentError` (a `ValueError`) raised by the bindings.
pub fn invalid(py: Python<'_>, msg: impl Into<String>) -> PyErr {
    Failure::InvalidArgument(msg.into()).into_pyerr(py)
}

/// A `TypeError` naming an unexpected keyword argument, as Python's own.
pub fn unexpected_keyword(func: &str, key: &str) -> PyErr {
    pyo3::exceptions::PyTypeError::new_err(format!(
        "{func}() got an unexpected keyword argument '{key}'"
    ))
}

/// The keyword arguments of `kwargs` as (name, value) pairs.
pub fn kwargs_items<'py>(
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Vec<(String, Bound<'py, PyAny>)>> {
    let mut out = Vec::new();
    if let Some(d) = kwargs {
        for (k, v) in d.iter() {
            out.push((k.extract::<String>()?, v));
        }
    }
    Ok(out)
}
