//! Rows of a table → Arrow record batches with the schema's types: SMALLINT Int16, INT Int32,
//! BIGINT Int64, DOUBLE Float64, DECIMAL(p,s) Decimal128(p,s), BOOLEAN Boolean, TEXT Utf8,
//! BYTES Binary, DATE Date32, TIMESTAMP Timestamp(µs, UTC). NULL is Arrow's null; every
//! field is nullable unless the column is NOT NULL.

use std::sync::Arc;

use arrow_array::builder::{
    ArrayBuilder, BinaryBuilder, BooleanBuilder, Date32Builder, Decimal128Builder, Float64Builder,
    Int16Builder, Int32Builder, Int64Builder, StringBuilder, TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef, TimeUnit};

use crate::schema::TableDef;
use crate::types::{ColumnType, Value};

/// The Arrow type a column of type `ty` is read back as.
pub fn arrow_type(ty: &ColumnType) -> DataType {
    match ty {
        ColumnType::SmallInt => DataType::Int16,
        ColumnType::Int => DataType::Int32,
        ColumnType::BigInt => DataType::Int64,
        ColumnType::Double => DataType::Float64,
        ColumnType::Decimal { precision, scale } => DataType::Decimal128(*precision, *scale as i8),
        ColumnType::Bool => DataType::Boolean,
        ColumnType::Text { .. } => DataType::Utf8,
        ColumnType::Bytes => DataType::Binary,
        ColumnType::Date => DataType::Date32,
        ColumnType::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
    }
}

/// Builds record batches of some columns of a table from its rows.
pub struct BatchBuilder {
    schema: SchemaRef,
    /// Table column of each output column.
    columns: Vec<usize>,
    builders: Vec<Box<dyn ArrayBuilder>>,
    types: Vec<ColumnType>,
    rows: usize,
}

impl BatchBuilder {
    /// A builder of the table's `columns` (indexes into `t.columns`, in output order).
    pub fn new(t: &TableDef, columns: Vec<usize>) -> BatchBuilder {
        let fields: Vec<Field> = columns
            .iter()
            .map(|&c| {
                let col = &t.columns[c];
                Field::new(&col.name, arrow_type(&col.ty), !col.not_null)
            })
            .collect();
        let types: Vec<ColumnType> = columns.iter().map(|&c| t.columns[c].ty).collect();
        let mut b = BatchBuilder {
            schema: Arc::new(Schema::new(fields)),
            columns,
            builders: Vec::new(),
            types,
            rows: 0,
        };
        b.builders = b.types.iter().map(new_builder).collect();
        b
    }

    /// The batches' schema.
    pub fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    /// Rows appended since the last [`finish`](Self::finish).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Appends one row (all the table's columns, in table order).
    pub fn push(&mut self, row: &[Value<'_>]) {
        for (n, &c) in self.columns.iter().enumerate() {
            append(self.builders[n].as_mut(), &self.types[n], &row[c]);
        }
        self.rows += 1;
    }

    /// The rows appended so far as one batch; the builder starts over empty.
    pub fn finish(&mut self) -> Result<RecordBatch, ArrowError> {
        let arrays: Vec<ArrayRef> = self.builders.iter_mut().map(|b| b.finish()).collect();
        self.rows = 0;
        RecordBatch::try_new(Arc::clone(&self.schema), arrays)
    }
}

fn new_builder(ty: &ColumnType) -> Box<dyn ArrayBuilder> {
    match ty {
        ColumnType::SmallInt => Box::new(Int16Builder::new()),
        ColumnType::Int => Box::new(Int32Builder::new()),
        ColumnType::BigInt => Box::new(Int64Builder::new()),
        ColumnType::Double => Box::new(Float64Builder::new()),
        ColumnType::Decimal { .. } => {
            Box::new(Decimal128Builder::new().with_data_type(arrow_type(ty)))
        }
        ColumnType::Bool => Box::new(BooleanBuilder::new()),
        ColumnType::Text { .. } => Box::new(StringBuilder::new()),
        ColumnType::Bytes => Box::new(BinaryBuilder::new()),
        ColumnType::Date => Box::new(Date32Builder::new()),
        ColumnType::Timestamp => Box::new(TimestampMicrosecondBuilder::new().with_timezone("UTC")),
    }
}

/// Appends `v` (a value of type `ty`, or NULL) to the builder made for `ty`.
fn append(b: &mut dyn ArrayBuilder, ty: &ColumnType, v: &Value<'_>) {
    macro_rules! put {
        ($builder:ty, $value:expr) => {
            if let Some(b) = b.as_any_mut().downcast_mut::<$builder>() {
                b.append_option($value);
            }
        };
    }
    match ty {
        ColumnType::SmallInt => put!(Int16Builder, as_int(v).map(|i| i as i16)),
        ColumnType::Int => put!(Int32Builder, as_int(v).map(|i| i as i32)),
        ColumnType::BigInt => put!(Int64Builder, as_int(v)),
        ColumnType::Double => put!(
            Float64Builder,
            match v {
                Value::Double(d) => Some(*d),
                _ => None,
            }
        ),
        ColumnType::Decimal { .. } => put!(
            Decimal128Builder,
            match v {
                Value::Decimal(d) => Some(*d),
                _ => None,
            }
        ),
        ColumnType::Bool => put!(
            BooleanBuilder,
            match v {
                Value::Bool(x) => Some(*x),
                _ => None,
            }
        ),
        ColumnType::Text { .. } => put!(
            StringBuilder,
            match v {
                Value::Text(s) => Some(s.as_ref()),
                _ => None,
            }
        ),
        ColumnType::Bytes => put!(
            BinaryBuilder,
            match v {
                Value::Bytes(s) => Some(s.as_ref()),
                _ => None,
            }
        ),
        ColumnType::Date => put!(
            Date32Builder,
            match v {
                Value::Date(d) => Some(*d),
                _ => None,
            }
        ),
        ColumnType::Timestamp => put!(
            TimestampMicrosecondBuilder,
            match v {
                Value::Timestamp(t) => Some(*t),
                _ => None,
            }
        ),
    }
}

fn as_int(v: &Value<'_>) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        _ => None,
    }
}
