//! JSON Patch (RFC 6902) from one JSON document to another: what a compact watcher gets
//! instead of the whole LiveState after a change (`patch`). Pure: no I/O, no clock.
//!
//! Objects are compared key by key. Arrays lose their common prefix and suffix of equal
//! elements first, so a change in the middle is told where it happened: an elimination puts
//! one element at the front of `eliminations` (latest first) and takes one seat out of the
//! middle of a table's `seats`, which comes out as one `add` and one `remove`. What is left
//! in the middle is compared element by element, or, when one side has more elements (a
//! table broken among changed tables), aligned at the fewest bytes. Wherever the operations
//! under a value come to more bytes than one `replace` of it, the `replace` is kept.
//!
//! Why not `json_patch::diff`: it compares arrays by index, so an element inserted or removed
//! rewrites every element after it. On an elimination in a large LiveState
//! (`a_real_elimination_is_a_patch_under_a_kilobyte`) its patch has hundreds of operations
//! where this one has a few, and takes several times as long to make; the measured figures
//! are in `docs/performance.md`.

use std::io;

use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;
use utoipa::openapi::schema::{Object, ObjectBuilder, SchemaType, Type};

/// One operation of a JSON Patch. The diff uses only these three; `path` is a JSON Pointer
/// (RFC 6901) into the document as the operations before it left it.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum PatchOperation {
    /// Puts `value` at `path`: a new key of an object, or an element inserted before the
    /// element at that index of an array (the later ones shift up).
    Add {
        path: String,
        #[schema(schema_with = any_value)]
        value: Value,
    },
    /// Takes the value at `path` out (the later elements of an array shift down).
    Remove { path: String },
    /// Puts `value` in place of the value at `path`.
    Replace {
        path: String,
        #[schema(schema_with = any_value)]
        value: Value,
    },
}

/// The schema of an operation's `value`: any JSON, as the LiveState has at `path`. Spelled as
/// every type, since a schema without a type does not read back (`schema_formats`).
fn any_value() -> Object {
    let any = [Type::Object, Type::Array, Type::String, Type::Number, Type::Boolean, Type::Null];
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter(any))
        .description(Some("Any JSON value: what the LiveState holds at `path` after the operation."))
        .build()
}

/// A [`PatchOperation`] borrowing its parts, serialised to the same bytes: the size of an
/// operation weighed before it is made.
#[derive(Serialize)]
#[serde(tag = "op", rename_all = "lowercase")]
enum OpRef<'a> {
    Add { path: &'a str, value: &'a Value },
    Remove { path: &'a str },
    Replace { path: &'a str, value: &'a Value },
}

/// The operations that turn `before` into `after`: none when they are equal.
pub fn diff(before: &Value, after: &Value) -> Vec<PatchOperation> {
    let mut differ = Differ::default();
    differ.value(before, after);
    differ.ops
}

/// The length of `value`'s compact JSON, when it is at most `limit` bytes; serialisation
/// stops as soon as it is past the limit.
pub fn json_len_within<T: Serialize + ?Sized>(value: &T, limit: usize) -> Option<usize> {
    let mut counter = Counter { written: 0, limit };
    serde_json::to_writer(&mut counter, value).ok().map(|()| counter.written)
}

/// The bytes an operation adds to a patch: its JSON and the comma or bracket after it.
fn op_size<T: Serialize>(op: &T) -> usize {
    json_len_within(op, usize::MAX).map_or(usize::MAX, |len| len + 1)
}

/// The bytes of operations of these sizes (an unmeasurable one counts as too many).
fn total(sizes: &[usize]) -> usize {
    sizes.iter().fold(0, |sum, size| sum.saturating_add(*size))
}

/// Counts the bytes written to it, and refuses any past its limit.
struct Counter {
    written: usize,
    limit: usize,
}

impl io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.written += buf.len();
        if self.written > self.limit {
            return Err(io::Error::other("past the limit"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The most element pairs compared to align two arrays' middles of different lengths (the
/// middle's shorter length times one more than the difference); past it they are compared
/// by index. A change of the game makes a difference of a few elements.
const MAX_PAIRS: usize = 4096;

/// The operations found so far, each with its size in bytes, and the pointer to the value
/// being compared.
#[derive(Default)]
struct Differ {
    ops: Vec<PatchOperation>,
    sizes: Vec<usize>,
    path: String,
}

impl Differ {
    fn value(&mut self, before: &Value, after: &Value) {
        let start = self.ops.len();
        match (before, after) {
            (Value::Object(before), Value::Object(after)) => self.object(before, after),
            (Value::Array(before), Value::Array(after)) => self.array(before, after),
            _ if before == after => return,
            _ => return self.push(PatchOperation::Replace { path: self.path.clone(), value: after.clone() }),
        }
        self.replace_if_smaller(start, after);
    }

    fn object(&mut self, before: &Map<String, Value>, after: &Map<String, Value>) {
        for (key, value) in after {
            let end = self.enter_key(key);
            match before.get(key) {
                Some(old) => self.value(old, value),
                None => self.push(PatchOperation::Add { path: self.path.clone(), value: value.clone() }),
            }
            self.path.truncate(end);
        }
        for key in before.keys().filter(|key| !after.contains_key(*key)) {
            let end = self.enter_key(key);
            self.push(PatchOperation::Remove { path: self.path.clone() });
            self.path.truncate(end);
        }
    }

    /// Trims the common prefix and suffix. A middle of the same length on both sides is
    /// compared element by element; otherwise the elements are aligned at the fewest bytes
    /// (each old element either paired with a new one and compared, or removed; or each new
    /// one paired or added), as long as that is a bounded search.
    fn array(&mut self, before: &[Value], after: &[Value]) {
        let prefix = before.iter().zip(after).take_while(|(old, new)| old == new).count();
        let (before, after) = (&before[prefix..], &after[prefix..]);
        let suffix = before.iter().rev().zip(after.iter().rev()).take_while(|(old, new)| old == new).count();
        let (before, after) = (&before[..before.len() - suffix], &after[..after.len() - suffix]);
        let extra = before.len().abs_diff(after.len());
        let paired = before.len().min(after.len());
        if extra == 0 || (extra + 1).saturating_mul(paired) > MAX_PAIRS {
            self.by_index(prefix, before, after);
        } else {
            self.aligned(prefix, before, after);
        }
    }

    /// Element by element as far as both go, then the old ones left removed (from the last,
    /// so each pointer names the element it means) or the new ones left added.
    fn by_index(&mut self, prefix: usize, before: &[Value], after: &[Value]) {
        for (index, (old, new)) in before.iter().zip(after).enumerate() {
            let end = self.enter_index(prefix + index);
            self.value(old, new);
            self.path.truncate(end);
        }
        let common = before.len().min(after.len());
        for index in (common..before.len()).rev() {
            self.remove_at(prefix + index);
        }
        for (index, new) in after.iter().enumerate().skip(common) {
            self.add_at(prefix + index, new);
        }
    }

    /// The cheapest alignment of two middles of different lengths, by an edit distance
    /// whose costs are bytes of operations: the longer side's elements are each paired with
    /// one of the shorter side's, in order, or are extra (removed when old, added when new).
    /// The operations go left to right, so an element's index is the count of new elements
    /// already in place before it.
    fn aligned(&mut self, prefix: usize, before: &[Value], after: &[Value]) {
        let removing = before.len() > after.len();
        let (long, short) = if removing { (before, after) } else { (after, before) };
        let extras = long.len() - short.len();
        // Where the element of the longer side `long_index` goes, with `short_index` of the
        // shorter side's elements and `long_index - short_index` extras before it.
        let index = |short_index: usize, long_index: usize| prefix + if removing { short_index } else { long_index };
        // pairs[x][s]: the operations turning the pair (short s, long s + x) into its new element.
        let mut pairs: Vec<Vec<Self>> = Vec::with_capacity(extras + 1);
        for x in 0..=extras {
            let mut row = Vec::with_capacity(short.len());
            for (s, short_element) in short.iter().enumerate() {
                let long_element = &long[s + x];
                let mut pair = Self::at(&self.path, index(s, s + x));
                let (old, new) = if removing { (long_element, short_element) } else { (short_element, long_element) };
                pair.value(old, new);
                row.push(pair);
            }
            pairs.push(row);
        }
        // The extra element of the longer side `long_index`: its pointer, and the bytes of its
        // operation.
        let extra = |short_index: usize, long_index: usize| -> (String, usize) {
            let path = Self::at(&self.path, index(short_index, long_index)).path;
            let value = &long[long_index];
            let op = if removing { OpRef::Remove { path: &path } } else { OpRef::Add { path: &path, value } };
            let size = op_size(&op);
            (path, size)
        };
        // cost[x][s]: the fewest bytes that put `s` of the shorter side's elements and `x`
        // extras in place.
        let mut cost = vec![vec![usize::MAX; short.len() + 1]; extras + 1];
        for x in 0..=extras {
            for s in 0..=short.len() {
                cost[x][s] = if x == 0 && s == 0 {
                    0
                } else {
                    let paired = (s > 0).then(|| cost[x][s - 1].saturating_add(pairs[x][s - 1].size()));
                    let extra = (x > 0).then(|| cost[x - 1][s].saturating_add(extra(s, s + x - 1).1));
                    paired.into_iter().chain(extra).min().unwrap_or(usize::MAX)
                };
            }
        }
        // Back from the end: each step is a pair or an extra, whichever the cost came from.
        let mut steps = Vec::with_capacity(long.len());
        let (mut x, mut s) = (extras, short.len());
        while x > 0 || s > 0 {
            let by_pair = s > 0 && cost[x][s] == cost[x][s - 1].saturating_add(pairs[x][s - 1].size());
            if by_pair {
                s -= 1;
                steps.push((true, s, x));
            } else {
                x -= 1;
                steps.push((false, s, x));
            }
        }
        for (is_pair, s, x) in steps.into_iter().rev() {
            if is_pair {
                let pair = std::mem::take(&mut pairs[x][s]);
                self.ops.extend(pair.ops);
                self.sizes.extend(pair.sizes);
            } else {
                let (path, size) = extra(s, s + x);
                let op = if removing {
                    PatchOperation::Remove { path }
                } else {
                    PatchOperation::Add { path, value: long[s + x].clone() }
                };
                self.ops.push(op);
                self.sizes.push(size);
            }
        }
    }

    /// A differ whose operations are under `path`, at the element `index`.
    fn at(path: &str, index: usize) -> Self {
        let mut differ = Self { path: path.to_owned(), ..Self::default() };
        differ.enter_index(index);
        differ
    }

    /// The bytes of the operations found.
    fn size(&self) -> usize {
        total(&self.sizes)
    }

    fn remove_at(&mut self, index: usize) {
        let end = self.enter_index(index);
        self.push(PatchOperation::Remove { path: self.path.clone() });
        self.path.truncate(end);
    }

    fn add_at(&mut self, index: usize, value: &Value) {
        let end = self.enter_index(index);
        self.push(PatchOperation::Add { path: self.path.clone(), value: value.clone() });
        self.path.truncate(end);
    }

    /// The operations from `start` on, all under the current path, become one `replace` of
    /// the value there when that is fewer bytes.
    fn replace_if_smaller(&mut self, start: usize, after: &Value) {
        let Some(limit) = total(&self.sizes[start..]).checked_sub(2) else { return };
        if let Some(size) = json_len_within(&OpRef::Replace { path: &self.path, value: after }, limit) {
            self.ops.truncate(start);
            self.sizes.truncate(start);
            self.ops.push(PatchOperation::Replace { path: self.path.clone(), value: after.clone() });
            self.sizes.push(size + 1);
        }
    }

    fn push(&mut self, op: PatchOperation) {
        self.sizes.push(op_size(&op));
        self.ops.push(op);
    }

    /// Appends the pointer's segment for `key` (RFC 6901: `~` is `~0`, `/` is `~1`); the
    /// length to truncate back to.
    fn enter_key(&mut self, key: &str) -> usize {
        let end = self.path.len();
        self.path.push('/');
        for c in key.chars() {
            match c {
                '~' => self.path.push_str("~0"),
                '/' => self.path.push_str("~1"),
                c => self.path.push(c),
            }
        }
        end
    }

    fn enter_index(&mut self, index: usize) -> usize {
        let end = self.path.len();
        self.path.push('/');
        self.path.push_str(&index.to_string());
        end
    }
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, TimeDelta, Utc};
    use floor_actors::live::{Game, LiveState, Player, Seat};
    use floor_actors::rules::clock::Clock;
    use floor_actors::rules::seating::table_count;
    use floor_actors::rules::structure::Segment;
    use floor_entities::enums::TournamentStatus;
    use serde_json::json;
    use uuid::Uuid;

    use super::*;

    /// `diff(before, after)` applied to `before` by json-patch gives `after`; the operations.
    fn checked(before: &Value, after: &Value) -> Vec<PatchOperation> {
        let ops = diff(before, after);
        let wire = serde_json::to_value(&ops).expect("the operations serialise");
        let patch: json_patch::Patch = serde_json::from_value(wire.clone()).expect("json-patch reads them");
        let mut doc = before.clone();
        json_patch::patch(&mut doc, &patch).unwrap_or_else(|err| panic!("{err}: {wire} on {before}"));
        assert_eq!(&doc, after, "{wire} on {before}");
        ops
    }

    fn wire(ops: &[PatchOperation]) -> Value {
        serde_json::to_value(ops).expect("the operations serialise")
    }

    #[test]
    fn equal_documents_need_no_operation() {
        for doc in [
            json!(null),
            json!(3),
            json!("x"),
            json!([]),
            json!({}),
            json!({"a": [1, {"b": [2, 3]}], "c": {"d": null}}),
            json!([[1, 2], [3, [4, 5]]]),
        ] {
            assert_eq!(checked(&doc, &doc.clone()), Vec::new(), "{doc}");
        }
    }

    /// A long value that stays, so that replacing the whole document costs more than the
    /// operations.
    const BALLAST: &str = "a value long enough that nobody would send it again for a small change";

    #[test]
    fn objects_are_compared_key_by_key() {
        let before = json!({"keep": BALLAST, "change": "old", "drop": true, "inner": {"a": BALLAST, "b": 2}});
        let after = json!({"keep": BALLAST, "change": "new", "add": [1], "inner": {"a": BALLAST, "b": 20}});
        let ops = checked(&before, &after);
        assert_eq!(
            wire(&ops),
            json!([
                {"op": "add", "path": "/add", "value": [1]},
                {"op": "replace", "path": "/change", "value": "new"},
                {"op": "replace", "path": "/inner/b", "value": 20},
                {"op": "remove", "path": "/drop"},
            ])
        );
        // Small enough, the whole document is one replace.
        let ops = checked(&json!({"a": 1, "b": 2}), &json!({"a": 3, "b": 4}));
        assert_eq!(wire(&ops), json!([{"op": "replace", "path": "", "value": {"a": 3, "b": 4}}]));
    }

    #[test]
    fn a_change_of_type_replaces_the_value() {
        let pairs = [
            (json!({"a": {"b": 1}}), json!({"a": [1]})),
            (json!({"a": [1]}), json!({"a": {"0": 1}})),
            (json!({"a": null}), json!({"a": {"b": 1}})),
            (json!({"a": 1}), json!({"a": "1"})),
            (json!({"a": 1}), json!({"a": 1.5})),
            (json!({"a": true}), json!({"a": null})),
            (json!([1, 2]), json!({"a": 1})),
            (json!({"a": 1}), json!(7)),
        ];
        for (before, after) in pairs {
            let ops = checked(&before, &after);
            assert_eq!(ops.len(), 1, "{}", wire(&ops));
            assert!(matches!(ops[0], PatchOperation::Replace { .. }), "{}", wire(&ops));
        }
        assert_eq!(wire(&checked(&json!({"a": 1}), &json!(7))), json!([{"op": "replace", "path": "", "value": 7}]));
    }

    #[test]
    fn keys_are_escaped_as_json_pointers() {
        let before = json!({"a/b": 1, "m~n": 2, "~1": 3, "": 4, "/~/": {"x": 5, "y": BALLAST}, "z": BALLAST});
        let after = json!({"a/b": 10, "m~n": 20, "~1": 30, "": 40, "/~/": {"x": 50, "y": BALLAST}, "z": BALLAST});
        let ops = checked(&before, &after);
        let paths: Vec<Value> = wire(&ops).as_array().expect("a list").iter().map(|op| op["path"].clone()).collect();
        assert_eq!(paths, [json!("/"), json!("/~1~0~1/x"), json!("/a~1b"), json!("/m~0n"), json!("/~01")]);
        let added = checked(&json!({"z": BALLAST}), &json!({"new/key~": 1, "z": BALLAST}));
        assert_eq!(wire(&added), json!([{"op": "add", "path": "/new~1key~0", "value": 1}]));
        let removed = checked(&json!({"old/key~": 1, "z": BALLAST}), &json!({"z": BALLAST}));
        assert_eq!(wire(&removed), json!([{"op": "remove", "path": "/old~1key~0"}]));
    }

    #[test]
    fn an_element_put_in_front_is_one_add() {
        let before = json!({"list": [{"n": 3, "s": BALLAST}, {"n": 2}, {"n": 1}]});
        let after = json!({"list": [{"n": 4}, {"n": 3, "s": BALLAST}, {"n": 2}, {"n": 1}]});
        assert_eq!(wire(&checked(&before, &after)), json!([{"op": "add", "path": "/list/0", "value": {"n": 4}}]));
        let appended = json!({"list": [{"n": 3, "s": BALLAST}, {"n": 2}, {"n": 1}, {"n": 0}]});
        assert_eq!(wire(&checked(&before, &appended)), json!([{"op": "add", "path": "/list/3", "value": {"n": 0}}]));
        assert_eq!(wire(&checked(&after, &before)), json!([{"op": "remove", "path": "/list/0"}]));
    }

    #[test]
    fn an_element_taken_from_the_middle_is_one_remove() {
        let before = json!([[BALLAST, 2, 3, 4, BALLAST], [6, 7, 8]]);
        let after = json!([[BALLAST, 2, 4, BALLAST], [6, 7, 8]]);
        assert_eq!(wire(&checked(&before, &after)), json!([{"op": "remove", "path": "/0/2"}]));
        assert_eq!(wire(&checked(&after, &before)), json!([{"op": "add", "path": "/0/2", "value": 3}]));
        // Several in a row, and the same element repeated around them.
        let before = json!([BALLAST, BALLAST, 2, 3, BALLAST, BALLAST]);
        let after = json!([BALLAST, BALLAST, BALLAST, BALLAST]);
        assert_eq!(
            wire(&checked(&before, &after)),
            json!([{"op": "remove", "path": "/2"}, {"op": "remove", "path": "/2"}])
        );
        assert_eq!(
            wire(&checked(&after, &before)),
            json!([{"op": "add", "path": "/2", "value": 2}, {"op": "add", "path": "/3", "value": 3}])
        );
    }

    #[test]
    fn nested_arrays_are_compared_where_they_changed() {
        let before = json!({"t": [{"no": 1, "s": [[1, "a"], [2, "b"]]}, {"no": 2, "s": [[1, BALLAST], [3, "d"]]}]});
        let after = json!({"t": [{"no": 1, "s": [[1, "a"], [2, "b"]]}, {"no": 2, "s": [[1, BALLAST], [3, "e"]]}]});
        assert_eq!(wire(&checked(&before, &after)), json!([{"op": "replace", "path": "/t/1/s/1/1", "value": "e"}]));
    }

    #[test]
    fn an_element_changed_through_and_through_is_one_replace() {
        let seat = |no: i32, id: &str, name: &str| json!({"seatNo": no, "registrationId": id, "name": name});
        let before = json!([seat(1, "aaaaaaaa", BALLAST), seat(2, "bbbbbbbb", "Boris"), seat(5, "cccccccc", "Clara")]);
        let after = json!([seat(1, "aaaaaaaa", BALLAST), seat(3, "dddddddd", "Denis"), seat(5, "cccccccc", "Clara")]);
        let ops = checked(&before, &after);
        assert_eq!(wire(&ops), json!([{"op": "replace", "path": "/1", "value": seat(3, "dddddddd", "Denis")}]));
        // A whole new list is one replace of the list, not an operation per element.
        let before = json!({"l": [1, 2, 3, 4, 5, 6, 7, 8], "m": BALLAST});
        let after = json!({"l": [9, 10, 11, 12, 13, 14, 15, 16], "m": BALLAST});
        assert_eq!(wire(&checked(&before, &after)), json!([{"op": "replace", "path": "/l", "value": after["l"]}]));
    }

    #[test]
    fn an_element_removed_among_changed_ones_is_aligned_with_its_neighbours() {
        // The second table breaks: its players go to the others, which each change a little.
        let table = |no: i32, seats: &[i32]| json!({"tableNo": no, "seats": seats, "name": BALLAST});
        let before = json!([table(1, &[1, 2, 3]), table(2, &[1, 2]), table(3, &[1, 2, 3]), table(4, &[1, 2])]);
        let after = json!([table(1, &[1, 2, 3, 4]), table(3, &[1, 2, 3]), table(4, &[1, 2, 3])]);
        let ops = checked(&before, &after);
        assert_eq!(
            wire(&ops),
            json!([
                {"op": "add", "path": "/0/seats/3", "value": 4},
                {"op": "remove", "path": "/1"},
                {"op": "add", "path": "/2/seats/2", "value": 3},
            ])
        );
        let back = checked(&after, &before);
        assert_eq!(back.len(), 3, "{}", wire(&back));
    }

    #[test]
    fn json_lengths_are_exact_and_stop_at_the_limit() {
        let doc = json!({"a": "é \"q\" \\ \n \u{1}", "b": [1.5, -2, null, true], "c": {}});
        let text = serde_json::to_string(&doc).expect("json");
        assert_eq!(json_len_within(&doc, usize::MAX), Some(text.len()));
        assert_eq!(json_len_within(&doc, text.len()), Some(text.len()));
        assert_eq!(json_len_within(&doc, text.len() - 1), None);
        for op in diff(&json!({"x": [1, {"y": "é"}]}), &json!({"x": [{"y": "e/"}, 2], "z": "~"})) {
            let text = serde_json::to_string(&op).expect("json");
            assert_eq!(json_len_within(&op, usize::MAX), Some(text.len()), "{text}");
        }
    }

    /// A deterministic generator of small JSON documents and their edits (xorshift64*).
    struct Gen(u64);

    impl Gen {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        fn key(&mut self) -> String {
            ["a", "b", "c", "d/e", "f~g", "~1", ""][self.below(7)].to_owned()
        }

        fn value(&mut self, depth: usize) -> Value {
            match self.below(if depth == 0 { 4 } else { 6 }) {
                0 => Value::Null,
                1 => json!(self.below(4)),
                2 => json!(["x", "y", "é", BALLAST][self.below(4)]),
                3 => json!(self.below(2) == 0),
                4 => (0..self.below(5)).map(|_| self.value(depth - 1)).collect(),
                _ => (0..self.below(4)).map(|_| (self.key(), self.value(depth - 1))).collect(),
            }
        }

        /// `value` with a few random edits somewhere inside.
        fn edited(&mut self, value: &Value, depth: usize) -> Value {
            match (value, self.below(8)) {
                (_, 0) => self.value(depth),
                (Value::Array(items), _) => {
                    let mut items = items.clone();
                    for _ in 0..=self.below(3) {
                        match self.below(3) {
                            0 if !items.is_empty() => {
                                let at = self.below(items.len());
                                items.remove(at);
                            }
                            1 => {
                                let at = self.below(items.len() + 1);
                                items.insert(at, self.value(depth.saturating_sub(1)));
                            }
                            _ if !items.is_empty() => {
                                let at = self.below(items.len());
                                items[at] = self.edited(&items[at], depth.saturating_sub(1));
                            }
                            _ => {}
                        }
                    }
                    Value::Array(items)
                }
                (Value::Object(map), _) => {
                    let mut map = map.clone();
                    let key = self.key();
                    match self.below(3) {
                        0 => {
                            map.remove(&key);
                        }
                        1 => {
                            map.insert(key, self.value(depth.saturating_sub(1)));
                        }
                        _ => {
                            let edited = map.get(&key).map(|old| self.edited(old, depth.saturating_sub(1)));
                            if let Some(edited) = edited {
                                map.insert(key, edited);
                            }
                        }
                    }
                    Value::Object(map)
                }
                (value, _) => value.clone(),
            }
        }
    }

    #[test]
    fn any_patch_applied_to_its_first_document_gives_the_second() {
        let mut generate = Gen(0x9e37_79b9_7f4a_7c15);
        let mut inside = 0;
        for round in 0..5_000 {
            // Mostly documents of some size, edited a few times; some small or unrelated ones.
            let before = if round % 5 == 0 {
                generate.value(4)
            } else {
                Value::Array((0..2 + generate.below(6)).map(|_| generate.value(4)).collect())
            };
            let after = match round % 10 {
                0 => generate.value(4),
                _ => (0..=generate.below(3)).fold(before.clone(), |doc, _| generate.edited(&doc, 4)),
            };
            let ops = checked(&before, &after);
            if before == after {
                assert!(ops.is_empty());
            }
            inside += usize::from(
                !ops.is_empty() && !matches!(&ops[..], [PatchOperation::Replace { path, .. }] if path.is_empty()),
            );
            // Never more bytes than replacing the whole document.
            let replace = json!([{"op": "replace", "path": "", "value": after}]).to_string().len();
            assert!(wire(&ops).to_string().len() <= replace, "{} for {after}", wire(&ops));
        }
        assert!(inside > 1_000, "the generated edits are mostly patched where they happened: {inside}");
    }

    fn at(minute: i64) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-27T18:00:00Z").map(|time| time.with_timezone(&Utc)).expect("a time")
            + TimeDelta::minutes(minute)
    }

    /// A running game of `count` walk-ins seated 9 a table, as the perf setup names them, on
    /// a structure of 13 levels.
    fn game(count: usize) -> Game {
        let tables = table_count(count) as i32;
        let players = (0..count)
            .map(|n| {
                let i = n as i32;
                Player {
                    registration_id: Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_0000 + n as u128),
                    name: format!("Игрок Номер {n:04} из турнира"),
                    seat: Seat { table_no: i % tables + 1, seat_no: i / tables + 1 },
                    eliminated_at: None,
                    created_at: at(-60),
                }
            })
            .collect();
        let levels = (1..=13)
            .map(|n| Segment::Level {
                duration_min: 20,
                small_blind: 25 * n,
                big_blind: 50 * n,
                ante: (n > 4).then_some(50 * n),
                note: None,
            })
            .collect();
        Game {
            tournament_id: Uuid::from_u128(7),
            status: TournamentStatus::Running,
            version: 1,
            clock: Some(Clock { current_level_idx: 0, level_started_at: at(0), paused_at: None }),
            levels,
            chips_in_play: count as i64 * 20_000,
            players,
            last_command_at: None,
        }
    }

    fn json_of(game: &Game, minute: i64) -> Value {
        serde_json::to_value(LiveState::of(game, at(minute))).expect("a LiveState serialises")
    }

    /// Applies `change` and returns the LiveStates before and after it, as JSON.
    fn changed(game: &mut Game, change: &floor_actors::live::Change, minute: i64) -> (Value, Value) {
        let before = json_of(game, minute - 1);
        game.apply(change);
        (before, json_of(game, minute))
    }

    /// 470 players, the first 100 of them (in seating order, as the perf setup does) out.
    fn big_game() -> Game {
        let mut game = game(470);
        let mut seated: Vec<(Seat, Uuid)> = game.players.iter().map(|p| (p.seat, p.registration_id)).collect();
        seated.sort_by_key(|(seat, _)| (seat.table_no, seat.seat_no));
        for (minute, (_, id)) in seated.into_iter().take(100).enumerate() {
            let change = game.eliminate(id, at(minute as i64)).expect("eliminated");
            game.apply(&change);
        }
        game
    }

    fn alive_at(game: &Game, table_no: i32) -> Vec<Uuid> {
        let mut seated: Vec<&Player> = game.alive().filter(|player| player.seat.table_no == table_no).collect();
        seated.sort_by_key(|player| player.seat.seat_no);
        seated.into_iter().map(|player| player.registration_id).collect()
    }

    #[test]
    fn a_real_elimination_is_a_patch_under_a_kilobyte() {
        let mut game = big_game();
        let out = alive_at(&game, 30)[3];
        let change = game.eliminate(out, at(200)).expect("eliminated");
        // Tables 1 to 11 are empty: table 30 is the 19th listed.
        assert_eq!(LiveState::of(&game, at(200)).tables[18].table_no, 30);
        let (before, after) = changed(&mut game, &change, 200);
        let ops = checked(&before, &after);
        let ours = wire(&ops).to_string().len();
        let theirs = serde_json::to_string(&json_patch::diff(&before, &after)).expect("json").len();
        let state = after.to_string().len();
        eprintln!("one elimination of 470/100: {ours} bytes of ops, json_patch::diff {theirs}, state {state}");
        assert!(ours <= 1024, "{}", wire(&ops));
        assert!(state > 60_000, "a LiveState of the usual size: {state}");
        let paths: Vec<&str> = ops
            .iter()
            .map(|op| match op {
                PatchOperation::Add { path, .. }
                | PatchOperation::Remove { path }
                | PatchOperation::Replace { path, .. } => path.as_str(),
            })
            .collect();
        assert_eq!(
            paths,
            ["/avgStack", "/eliminations/0", "/remaining", "/serverTime", "/tables/18/seats/3", "/version"],
            "{}",
            wire(&ops)
        );
    }

    #[test]
    fn every_change_of_a_game_day_is_a_patch_that_applies() {
        let mut game = big_game();
        let mut patches = Vec::new();
        let mut minute = 300;
        let mut step = |game: &mut Game, change: floor_actors::live::Change, what: &str| {
            minute += 1;
            let (before, after) = changed(game, &change, minute);
            let ops = checked(&before, &after);
            patches.push((what.to_owned(), wire(&ops).to_string().len(), after.to_string().len()));
        };
        // Out, and back.
        let out = alive_at(&game, 12)[0];
        let change = game.eliminate(out, at(301)).expect("eliminated");
        step(&mut game, change, "elimination");
        let change = game.undo().expect("undone");
        step(&mut game, change, "undo");
        // A move to another table, and one to a table nobody sat at any more.
        let mover = alive_at(&game, 20)[2];
        let change = game.reseat(mover, Seat { table_no: 50, seat_no: 9 }).expect("moved").expect("a change");
        step(&mut game, change, "reseat");
        let mover = alive_at(&game, 21)[0];
        let change = game.reseat(mover, Seat { table_no: 3, seat_no: 4 }).expect("moved").expect("a change");
        step(&mut game, change, "reseat to an empty table");
        // The last table breaks: its players go to the free seats of the other tables.
        let breaking = alive_at(&game, 53);
        let taken: std::collections::HashSet<Seat> = game.alive().map(|player| player.seat).collect();
        let tables: std::collections::BTreeSet<i32> = taken.iter().map(|seat| seat.table_no).collect();
        let free: Vec<Seat> = tables
            .into_iter()
            .filter(|table_no| *table_no != 53)
            .flat_map(|table_no| (1..=9).map(move |seat_no| Seat { table_no, seat_no }))
            .filter(|seat| !taken.contains(seat))
            .collect();
        assert!(free.len() >= breaking.len(), "{free:?}");
        let moves: Vec<(Uuid, Seat)> = breaking.into_iter().zip(free).collect();
        let change = game.reseat_batch(&moves).expect("moved").expect("a change");
        step(&mut game, change, "table break");
        // A reorder of the last two eliminations.
        let last: Vec<Uuid> = game.eliminations().iter().take(2).map(|(player, _)| player.registration_id).collect();
        let change = game.reorder(&[last[0], last[1]]).expect("reordered");
        step(&mut game, change, "reorder");
        // The clock.
        let change = game.pause(at(310)).expect("paused").expect("a change");
        step(&mut game, change, "pause");
        let change = game.step_level(floor_actors::rules::clock::Direction::Next, at(311)).expect("moved");
        step(&mut game, change, "level");
        for (what, ops, state) in &patches {
            eprintln!("{what}: {ops} bytes of ops, state {state}");
            assert!(ops * 10 < *state, "{what}: {ops} bytes against a state of {state}");
        }
    }
}
