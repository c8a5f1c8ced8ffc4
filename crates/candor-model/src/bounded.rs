//! Reading a result file within a memory budget. Every list, map and free-form value of the
//! model is deserialized through these functions (`#[serde(deserialize_with = ...)]`), which
//! charge the memory each element takes (`size_of` of the element, a free-form node's
//! size) against a budget that `load` sets from the file's size. A file whose elements are
//! cheap to write but dear to hold (`"results": [{}, {}, ...]`: three bytes of text, a few
//! kilobytes in memory each) is refused when the budget runs out, instead of taking the
//! machine's memory. Outside `load` (a document built in memory, a test) there is no budget.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

thread_local! {
    /// Bytes left to charge; None: no budget.
    static LEFT: Cell<Option<u64>> = const { Cell::new(None) };
    /// Set when a charge found the budget spent.
    static SPENT: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with a budget of `bytes`; returns its outcome and whether the budget ran out.
pub(crate) fn with_budget<T>(bytes: u64, f: impl FnOnce() -> T) -> (T, bool) {
    let before = LEFT.with(|l| l.replace(Some(bytes)));
    SPENT.with(|s| s.set(false));
    let out = f();
    LEFT.with(|l| l.set(before));
    (out, SPENT.with(|s| s.replace(false)))
}

/// Overhead charged per element of a map or per free-form node on top of its size (the
/// allocator's and the tree's).
const NODE_OVERHEAD: usize = 16;

fn charge<E: de::Error>(bytes: usize) -> Result<(), E> {
    LEFT.with(|l| match l.get() {
        None => Ok(()),
        Some(left) if left >= bytes as u64 => {
            l.set(Some(left - bytes as u64));
            Ok(())
        }
        Some(_) => {
            SPENT.with(|s| s.set(true));
            Err(E::custom(
                "the file takes more memory to read than its size allows",
            ))
        }
    })
}

struct VecVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for VecVisitor<T> {
    type Value = Vec<T>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a sequence")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        let mut v = Vec::new();
        loop {
            charge::<A::Error>(std::mem::size_of::<T>().max(1))?;
            match seq.next_element()? {
                Some(x) => v.push(x),
                None => return Ok(v),
            }
        }
    }
}

/// A list, each element charged.
pub fn vec<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    d.deserialize_seq(VecVisitor(PhantomData))
}

/// The entries of `map`, each charged `cost` before it is read; `next` reads one entry.
fn charged_map<'de, A: MapAccess<'de>, T>(
    mut map: A,
    cost: usize,
    mut next: impl FnMut(&mut A) -> Result<Option<(String, T)>, A::Error>,
) -> Result<BTreeMap<String, T>, A::Error> {
    let mut m = BTreeMap::new();
    loop {
        charge::<A::Error>(cost)?;
        match next(&mut map)? {
            Some((k, v)) => {
                m.insert(k, v);
            }
            None => return Ok(m),
        }
    }
}

struct MapVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for MapVisitor<T> {
    type Value = BTreeMap<String, T>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        charged_map(
            map,
            std::mem::size_of::<(String, T)>() + NODE_OVERHEAD,
            |map| map.next_entry::<String, T>(),
        )
    }
}

/// A map by name, each entry charged.
pub fn map<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<BTreeMap<String, T>, D::Error> {
    d.deserialize_map(MapVisitor(PhantomData))
}

struct OptMapVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for OptMapVisitor<T> {
    type Value = Option<BTreeMap<String, T>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map or null")
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        map(d).map(Some)
    }
}

/// An optional map by name, each entry charged.
pub fn opt_map<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<BTreeMap<String, T>>, D::Error> {
    d.deserialize_option(OptMapVisitor(PhantomData))
}

/// A free-form JSON value, every node of it charged.
struct Free;

impl<'de> DeserializeSeed<'de> for Free {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(FreeVisitor)
    }
}

struct FreeVisitor;

const NODE: usize = std::mem::size_of::<Value>();

impl<'de> Visitor<'de> for FreeVisitor {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        charge::<E>(NODE)?;
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        charge::<E>(NODE)?;
        Ok(Value::from(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        charge::<E>(NODE)?;
        Ok(Value::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        charge::<E>(NODE)?;
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        charge::<E>(NODE)?;
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        charge::<E>(NODE)?;
        Ok(Value::String(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        charge::<E>(NODE)?;
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(FreeVisitor)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut v = Vec::new();
        loop {
            charge::<A::Error>(NODE)?;
            match seq.next_element_seed(Free)? {
                Some(x) => v.push(x),
                None => return Ok(Value::Array(v)),
            }
        }
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut m = serde_json::Map::new();
        loop {
            charge::<A::Error>(NODE + std::mem::size_of::<String>() + NODE_OVERHEAD)?;
            match map.next_key::<String>()? {
                Some(k) => {
                    let v = map.next_value_seed(Free)?;
                    m.insert(k, v);
                }
                None => return Ok(Value::Object(m)),
            }
        }
    }
}

/// A free-form value.
pub fn value<'de, D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
    d.deserialize_any(FreeVisitor)
}

/// An optional free-form value (null: None).
pub fn opt_value<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    value(d).map(|v| if v.is_null() { None } else { Some(v) })
}

/// A map of free-form values by name.
pub fn value_map<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, Value>, D::Error> {
    struct Seeded;
    impl<'de> Visitor<'de> for Seeded {
        type Value = BTreeMap<String, Value>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a map")
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            charged_map(
                map,
                NODE + std::mem::size_of::<String>() + NODE_OVERHEAD,
                |map| match map.next_key::<String>()? {
                    Some(k) => Ok(Some((k, map.next_value_seed(Free)?))),
                    None => Ok(None),
                },
            )
        }
    }
    d.deserialize_map(Seeded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize, Debug)]
    struct Doc {
        #[serde(deserialize_with = "vec", default)]
        list: Vec<[u64; 4]>,
        #[serde(deserialize_with = "opt_value", default)]
        free: Option<Value>,
    }

    #[test]
    fn without_a_budget_everything_reads() {
        let d: Doc = serde_json::from_str(r#"{"list":[[1,2,3,4]],"free":{"a":[1,2]}}"#).unwrap();
        assert_eq!(d.list, vec![[1, 2, 3, 4]]);
        assert_eq!(d.free, Some(serde_json::json!({"a": [1, 2]})));
    }

    #[test]
    fn a_budget_stops_cheap_text_that_is_dear_in_memory() {
        let text = format!("{{\"list\":[{}[0,0,0,0]]}}", "[0,0,0,0],".repeat(99));
        let (d, spent) = with_budget(100 * 32 + 32, || serde_json::from_str::<Doc>(&text));
        assert!(!spent);
        assert_eq!(d.unwrap().list.len(), 100);
        let (d, spent) = with_budget(50 * 32, || serde_json::from_str::<Doc>(&text));
        assert!(spent, "{d:?}");
        assert!(d.is_err());
        let free = format!("{{\"free\":[{}0]}}", "0,".repeat(999));
        let (d, spent) = with_budget(500 * 32, || serde_json::from_str::<Doc>(&free));
        assert!(spent && d.is_err());
        // The budget is gone once the closure is done.
        assert!(serde_json::from_str::<Doc>(&free).is_ok());
    }
}
