//! Topic names by id, as this broker's image has them. Fetch from v13 names topics by id
//! (KIP-516), and a fetch session by id looks up each partition it follows at every fetch, so
//! the lookup is a map kept in step with the image (rebuilt when a metadata batch creates or
//! removes a topic, `reconcile`), not a walk of every topic per request. Derived from the image
//! alone: no decisions, no IO.

use crate::metadata::image::Image;
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Debug, Default)]
pub struct TopicIds {
    names: BTreeMap<[u8; 16], Arc<str>>,
}

impl TopicIds {
    /// The ids of `image`'s topics.
    pub fn of(image: &Image) -> TopicIds {
        TopicIds { names: image.topics.iter().map(|(name, t)| (t.id, Arc::from(name.as_str()))).collect() }
    }

    /// The name of the topic with id `id`, if the image has it.
    pub fn name(&self, id: [u8; 16]) -> Option<&Arc<str>> {
        self.names.get(&id)
    }
}
