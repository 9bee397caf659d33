//! Tables of the import catalog as Python values: a table's definition as a dict, a row as
//! `(name, type tag, value)` triples that `sluice._table` turns into typed Python values.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use sluice_import::types::{ColumnType, Value};
use sluice_import::TableDef;

/// The tag `sluice._table` converts by: `int`, `float`, `decimal`, `bool`, `text`, `bytes`,
/// `date`, `timestamp`.
fn tag(ty: &ColumnType) -> &'static str {
    match ty {
        ColumnType::SmallInt | ColumnType::Int | ColumnType::BigInt => "int",
        ColumnType::Double => "float",
        ColumnType::Decimal { .. } => "decimal",
        ColumnType::Bool => "bool",
        ColumnType::Text { .. } => "text",
        ColumnType::Bytes => "bytes",
        ColumnType::Date => "date",
        ColumnType::Timestamp => "timestamp",
    }
}

/// `{"name", "columns": [{"name", "type", "scale", "not_null"}], "primary_key", "indexes",
/// "layout"}`.
pub fn table_dict<'py>(py: Python<'py>, t: &TableDef) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", &t.name)?;
    let cols = PyList::empty(py);
    for c in t.columns.iter().filter(|c| !c.hidden) {
        let cd = PyDict::new(py);
        cd.set_item("name", &c.name)?;
        cd.set_item("type", tag(&c.ty))?;
        if let ColumnType::Decimal { precision, scale } = c.ty {
            cd.set_item("precision", precision)?;
            cd.set_item("scale", scale)?;
        }
        cd.set_item("not_null", c.not_null)?;
        cols.append(cd)?;
    }
    d.set_item("columns", cols)?;
    let pk: Vec<&str> = t
        .primary_key
        .iter()
        .map(|&i| t.columns[i].name.as_str())
        .collect();
    d.set_item("primary_key", pk)?;
    let idx = PyList::empty(py);
    for i in &t.indexes {
        let id = PyDict::new(py);
        id.set_item("name", &i.name)?;
        let cols: Vec<&str> = i
            .columns
            .iter()
            .map(|&c| t.columns[c].name.as_str())
            .collect();
        id.set_item("columns", cols)?;
        id.set_item("unique", i.unique)?;
        idx.append(id)?;
    }
    d.set_item("indexes", idx)?;
    d.set_item("layout", format!("{:?}", t.layout).to_lowercase())?;
    Ok(d)
}

/// The row as `[(name, tag, scale, raw value)]`: decimals as their unscaled integer's digits,
/// dates as days and timestamps as microseconds since the epoch.
pub fn row_list<'py>(
    py: Python<'py>,
    t: &TableDef,
    row: &[Value<'_>],
) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for (c, v) in t.columns.iter().zip(row) {
        if c.hidden {
            continue;
        }
        let scale = match c.ty {
            ColumnType::Decimal { scale, .. } => scale,
            _ => 0,
        };
        let raw: Bound<'py, PyAny> = match v {
            Value::Null => py.None().into_bound(py),
            Value::Int(i) => i.into_pyobject(py)?.into_any(),
            Value::Double(f) => f.into_pyobject(py)?.into_any(),
            Value::Decimal(d) => d.to_string().into_pyobject(py)?.into_any(),
            Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
            Value::Text(s) => s.as_ref().into_pyobject(py)?.into_any(),
            Value::Bytes(b) => PyBytes::new(py, b).into_any(),
            Value::Date(d) => d.into_pyobject(py)?.into_any(),
            Value::Timestamp(us) => us.into_pyobject(py)?.into_any(),
        };
        out.append((c.name.as_str(), tag(&c.ty), scale, raw))?;
    }
    Ok(out)
}
