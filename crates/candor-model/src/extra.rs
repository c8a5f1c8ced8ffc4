//! `witness.extra`: the details a witness source adds, by name, and the typed facts the
//! verdict was judged from. In the JSON the facts are the entry `"facts"` of the same
//! object, where they have always been, so files keep their shape and old ones load.

use crate::Facts;
use serde::de::Deserializer;
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The key the facts are saved under.
const FACTS: &str = "facts";

/// The witness's `extra` object: named details (a map, reached through `Deref`) plus
/// `facts`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WitnessExtra {
    /// What the witness measured, as the rules read it (None when the witness kept none:
    /// an audit's witness, or a file from before facts were saved).
    pub facts: Option<Facts>,
    details: BTreeMap<String, serde_json::Value>,
}

impl std::ops::Deref for WitnessExtra {
    type Target = BTreeMap<String, serde_json::Value>;
    fn deref(&self) -> &Self::Target {
        &self.details
    }
}

impl std::ops::DerefMut for WitnessExtra {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.details
    }
}

impl Serialize for WitnessExtra {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let n = self.details.len() + usize::from(self.facts.is_some());
        // The facts as a JSON value, whose keys are sorted, as files have always had them.
        let facts = match &self.facts {
            Some(f) => Some(serde_json::to_value(f).map_err(serde::ser::Error::custom)?),
            None => None,
        };
        let mut m = s.serialize_map(Some(n))?;
        // Keys in order, the facts at their place among them, as one sorted map had them.
        let mut facts = facts.as_ref();
        for (k, v) in &self.details {
            if let Some(f) = facts.filter(|_| k.as_str() > FACTS) {
                m.serialize_entry(FACTS, f)?;
                facts = None;
            }
            m.serialize_entry(k, v)?;
        }
        if let Some(f) = facts {
            m.serialize_entry(FACTS, f)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for WitnessExtra {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut details = crate::bounded::value_map(d)?;
        // Facts that do not fit the type stay a detail rather than being lost.
        let facts = match details.remove(FACTS) {
            Some(v) => match serde_json::from_value::<Facts>(v.clone()) {
                Ok(f) => Some(f),
                Err(_) => {
                    details.insert(FACTS.into(), v);
                    None
                }
            },
            None => None,
        };
        Ok(WitnessExtra { facts, details })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_sit_among_the_details_in_key_order() {
        let mut e = WitnessExtra::default();
        e.insert("bpf_dropped".into(), serde_json::json!(1));
        e.insert("zz".into(), serde_json::json!("z"));
        e.facts = Some(Facts {
            test: "read".into(),
            app_read: 7,
            ..Default::default()
        });
        let text = serde_json::to_string(&e).unwrap();
        let b = text.find("bpf_dropped").unwrap();
        let f = text.find("\"facts\"").unwrap();
        let z = text.find("\"zz\"").unwrap();
        assert!(b < f && f < z, "{text}");
        let back: WitnessExtra = serde_json::from_str(&text).unwrap();
        assert_eq!(back, e);
        // Only facts.
        e.clear();
        let back: WitnessExtra = serde_json::from_str(&serde_json::to_string(&e).unwrap()).unwrap();
        assert_eq!(back, e);
    }

    #[test]
    fn facts_that_do_not_fit_stay_a_detail() {
        let e: WitnessExtra = serde_json::from_str(r#"{"facts": 3, "a": 1}"#).unwrap();
        assert!(e.facts.is_none());
        assert_eq!(e.get("facts"), Some(&serde_json::json!(3)));
        assert_eq!(e.len(), 2);
    }
}
