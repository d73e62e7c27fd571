//! The pieces the export's schema is described with, for the contract: the document is
//! streamed, never built, so its shape is told by hand from the entries' own schemas.

use utoipa::ToSchema;
use utoipa::openapi::schema::{
    ArrayBuilder, KnownFormat, ObjectBuilder, OneOfBuilder, Schema, SchemaFormat, SchemaType, Type,
};
use utoipa::openapi::{Ref, RefOr};

/// The named schemas a description refers to, gathered for the contract's components.
#[derive(Default)]
pub(super) struct Named(pub(super) Vec<(String, RefOr<Schema>)>);

impl Named {
    /// A reference to `T`'s schema, which (with those it names) joins the components.
    pub(super) fn one<T: ToSchema>(&mut self) -> RefOr<Schema> {
        self.0.push((T::name().into_owned(), T::schema()));
        T::schemas(&mut self.0);
        Ref::from_schema_name(T::name()).into()
    }

    /// An array of `T`.
    pub(super) fn list<T: ToSchema>(&mut self) -> RefOr<Schema> {
        ArrayBuilder::new().items(self.one::<T>()).into()
    }
}

/// An object of these properties, every one required.
pub(super) fn object<const N: usize>(properties: [(&str, RefOr<Schema>); N]) -> RefOr<Schema> {
    let mut object = ObjectBuilder::new();
    for (name, schema) in properties {
        object = object.property(name, schema).required(name);
    }
    object.into()
}

/// A string of `format`, of `types` (a string, or a string or null).
pub(super) fn text(format: KnownFormat, types: SchemaType) -> RefOr<Schema> {
    ObjectBuilder::new().schema_type(types).format(Some(SchemaFormat::KnownFormat(format))).into()
}

/// `schema` or null.
pub(super) fn nullable(schema: RefOr<Schema>) -> RefOr<Schema> {
    OneOfBuilder::new().item(schema).item(ObjectBuilder::new().schema_type(Type::Null)).into()
}
