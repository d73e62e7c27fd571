//! Reading a JSON document into a request type as its contract reads it: a struct comes only
//! from a JSON object (HTTP bodies, and the payloads of `/live`'s `join` and `leave`). serde's derive also fills a struct from an array, field by field in order, so
//! `[null, null]` would pass as a patch that changes nothing, and `[1, 2]` as a level, although
//! the contract says object. [`ObjectsOnly`] is the document's deserializer with that one door
//! shut, at every depth; everything else is serde_json's own reading of the value.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Unexpected, Visitor};
use serde_json::{Map, Value};

/// A JSON value whose structs, at any depth, are read from objects only.
pub struct ObjectsOnly(pub Value);

/// What a non-object was, for the error (serde_json keeps its own version private).
fn unexpected(value: &Value) -> Unexpected<'_> {
    match value {
        Value::Null => Unexpected::Unit,
        Value::Bool(flag) => Unexpected::Bool(*flag),
        Value::Number(_) => Unexpected::Other("number"),
        Value::String(text) => Unexpected::Str(text),
        Value::Array(_) => Unexpected::Seq,
        Value::Object(_) => Unexpected::Map,
    }
}

fn visit_array<'de, V: Visitor<'de>>(items: Vec<Value>, visitor: V) -> Result<V::Value, serde_json::Error> {
    let len = items.len();
    let mut items = Items(items.into_iter());
    let value = visitor.visit_seq(&mut items)?;
    match items.0.len() {
        0 => Ok(value),
        _ => Err(de::Error::invalid_length(len, &"fewer elements in the array")),
    }
}

fn visit_object<'de, V: Visitor<'de>>(fields: Map<String, Value>, visitor: V) -> Result<V::Value, serde_json::Error> {
    visitor.visit_map(Fields { fields: fields.into_iter(), value: None })
}

/// Primitives and enums read as serde_json reads them.
macro_rules! as_serde_json_does {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            self.0.$method(visitor)
        }
    )*};
}

impl<'de> Deserializer<'de> for ObjectsOnly {
    type Error = serde_json::Error;

    as_serde_json_does! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_i128
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_u128 deserialize_f32
        deserialize_f64 deserialize_char deserialize_str deserialize_string deserialize_bytes
        deserialize_byte_buf deserialize_unit deserialize_identifier deserialize_ignored_any
    }

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Array(items) => visit_array(items, visitor),
            Value::Object(fields) => visit_object(fields, visitor),
            other => other.deserialize_any(visitor),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            other => visitor.visit_some(ObjectsOnly(other)),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value, Self::Error> {
        self.0.deserialize_unit_struct(name, visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Array(items) => visit_array(items, visitor),
            other => other.deserialize_seq(visitor),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Self::Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Object(fields) => visit_object(fields, visitor),
            other => other.deserialize_map(visitor),
        }
    }

    /// The one difference from serde_json: an array is no struct.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Object(fields) => visit_object(fields, visitor),
            other => Err(de::Error::invalid_type(unexpected(&other), &"a JSON object")),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_enum(name, variants, visitor)
    }
}

/// An array's items, each read as [`ObjectsOnly`].
struct Items(std::vec::IntoIter<Value>);

impl<'de> SeqAccess<'de> for Items {
    type Error = serde_json::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Self::Error> {
        self.0.next().map(|item| seed.deserialize(ObjectsOnly(item))).transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

/// An object's fields, each value read as [`ObjectsOnly`].
struct Fields {
    fields: serde_json::map::IntoIter,
    /// The value of the key just handed out.
    value: Option<Value>,
}

impl<'de> MapAccess<'de> for Fields {
    type Error = serde_json::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Self::Error> {
        let Some((key, value)) = self.fields.next() else { return Ok(None) };
        self.value = Some(value);
        seed.deserialize(Value::String(key)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Self::Error> {
        let value = self.value.take().ok_or_else(|| de::Error::custom("a value without its key"))?;
        seed.deserialize(ObjectsOnly(value))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.fields.len())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Level {
        small_blind: Option<i64>,
        big_blind: Option<i64>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase", tag = "kind")]
    enum Segment {
        Level { minutes: u32 },
        Break,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Patch {
        name: Option<String>,
        levels: Option<Vec<Level>>,
        segments: Option<Vec<Segment>>,
        texts: Option<BTreeMap<String, Level>>,
        id: Option<uuid::Uuid>,
        pair: Option<(u8, u8)>,
        extra: Option<Value>,
    }

    fn read<T: for<'de> Deserialize<'de>>(document: Value) -> Result<T, String> {
        serde_path_to_error::deserialize(ObjectsOnly(document))
            .map_err(|err| format!("{}: {}", err.path(), err.inner()))
    }

    #[test]
    fn an_array_is_no_struct_at_any_depth() {
        let seven_nulls = json!([null, null, null, null, null, null, null]);
        assert!(serde_json::from_value::<Patch>(seven_nulls.clone()).is_ok(), "serde_json alone takes it");
        let top = read::<Patch>(seven_nulls).expect_err("refused");
        assert!(top.contains("expected a JSON object"), "{top}");
        let nested = read::<Patch>(json!({"levels": [{"smallBlind": 1}, [100, 200]]})).expect_err("refused");
        assert!(nested.starts_with("levels[1]: invalid type: sequence"), "{nested}");
        let in_map = read::<Patch>(json!({"texts": {"ru": [1, 2]}})).expect_err("refused");
        assert!(in_map.starts_with("texts.ru: "), "{in_map}");
        assert!(read::<Patch>(json!("text")).is_err());
    }

    #[test]
    fn everything_else_reads_as_serde_json_reads_it() {
        let document = json!({
            "name": "Weekend",
            "levels": [{"smallBlind": 100, "bigBlind": 200}, {}],
            "segments": [{"kind": "level", "minutes": 20}, {"kind": "break"}],
            "texts": {"ru": {"bigBlind": 2}},
            "id": "0190b7a4-7e1c-7bb4-8c5e-2d5e0a9c1f00",
            "pair": [1, 2],
            "extra": {"any": [1, "two", null]},
        });
        let ours: Patch = read(document.clone()).expect("read");
        assert_eq!(ours, serde_json::from_value::<Patch>(document).expect("serde_json reads it"));
        assert_eq!(ours.segments, Some(vec![Segment::Level { minutes: 20 }, Segment::Break]));
        assert_eq!(read::<Patch>(json!({})).expect("read"), serde_json::from_value(json!({})).expect("read"));
    }

    #[test]
    fn errors_keep_their_paths_and_wrong_lengths_are_refused() {
        let wrong = read::<Patch>(json!({"levels": [{"smallBlind": "ten"}]})).expect_err("refused");
        assert!(wrong.starts_with("levels[0].smallBlind: invalid type: string"), "{wrong}");
        let long = read::<Patch>(json!({"pair": [1, 2, 3]})).expect_err("refused");
        assert!(long.starts_with("pair: invalid length 3"), "{long}");
        let enum_text = read::<Patch>(json!({"segments": [{"kind": "lunch"}]})).expect_err("refused");
        assert!(enum_text.contains("unknown variant `lunch`"), "{enum_text}");
    }
}
