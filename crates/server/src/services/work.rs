//! The dynamic services' work, written as resumable state machines so that a scheduler can run
//! them in slices: `run(deadline)` works until done or until the deadline passes (checked every
//! few thousand steps), and a later call continues where it stopped. Run with no deadline, the
//! same code runs to completion, so every policy does exactly the same work.

use std::sync::Arc;
use std::time::Instant;

/// Steps between two looks at the clock (a clock read costs about 20 ns; a step about 2).
const STEPS_PER_CHECK: u32 = 4096;

/// A piece of service work.
pub(crate) trait Work: Send {
    /// Works until done (returns the response body) or until `deadline` (returns None).
    fn run(&mut self, deadline: Option<Instant>) -> Option<String>;
}

fn expired(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

/// fib(n) by the naive doubly recursive definition (the paper's servlets), as an explicit
/// stack so it can pause: as many calls as the recursive version (fib(25): 242 785).
pub(crate) struct Fib {
    n: u32,
    stack: Vec<u32>,
    sum: u64,
    started: bool,
}

impl Fib {
    pub(crate) fn new(n: u32) -> Fib {
        Fib {
            n,
            stack: Vec::with_capacity(n as usize * 2 + 2),
            sum: 0,
            started: false,
        }
    }
}

impl Work for Fib {
    fn run(&mut self, deadline: Option<Instant>) -> Option<String> {
        if !self.started {
            self.started = true;
            self.stack.push(self.n);
        }
        loop {
            for _ in 0..STEPS_PER_CHECK {
                match self.stack.pop() {
                    None => return Some(format!("fib({}) = {}\n", self.n, self.sum)),
                    Some(k) if k < 2 => self.sum += u64::from(k),
                    Some(k) => {
                        self.stack.push(k - 1);
                        self.stack.push(k - 2);
                    }
                }
            }
            if expired(deadline) {
                return None;
            }
        }
    }
}

/// A generated XML catalogue of `items` items, about 8 nodes each, the same for a given size.
pub(crate) fn catalogue(items: usize) -> String {
    let mut xml = String::with_capacity(items * 160 + 64);
    xml.push_str("<?xml version=\"1.0\"?>\n<catalog>\n");
    for i in 0..items {
        let key = i % 97;
        let price = (i * 7919) % 10_000;
        xml.push_str(&format!(
            "<item id=\"{i}\" key=\"k{key}\"><name>Item {i}</name><price>{}.{:02}</price>\
             <tags><tag>t{}</tag><tag>t{}</tag></tags></item>\n",
            price / 100,
            price % 100,
            i % 13,
            i % 31
        ));
    }
    xml.push_str("</catalog>\n");
    xml
}

/// The heavy service: build a DOM tree from the XML document, then search all its nodes
/// `passes` times (for elements whose `key` is "k42" and text nodes that mention "t7").
pub(crate) struct Xml {
    passes: u32,
    state: XmlState,
}

type Dom<'a> = roxmltree::Document<'a>;

self_cell::self_cell!(
    /// A DOM tree and the text it borrows from, kept together while the search pauses.
    struct ParsedDoc {
        owner: Arc<str>,
        #[covariant]
        dependent: Dom,
    }
);

enum XmlState {
    Start(Arc<str>),
    Searching {
        doc: ParsedDoc,
        pass: u32,
        node: u32,
        found: u64,
    },
    Failed(String),
    Taken,
}

impl Xml {
    pub(crate) fn new(text: Arc<str>, passes: u32) -> Xml {
        Xml {
            passes,
            state: XmlState::Start(text),
        }
    }
}

impl Work for Xml {
    fn run(&mut self, deadline: Option<Instant>) -> Option<String> {
        if let XmlState::Start(_) = self.state {
            let XmlState::Start(text) = std::mem::replace(&mut self.state, XmlState::Taken) else {
                unreachable!("checked above");
            };
            // Building the DOM is one step: roxmltree's parser cannot pause.
            self.state = match ParsedDoc::try_new(text, |t| roxmltree::Document::parse(t)) {
                Ok(doc) => XmlState::Searching {
                    doc,
                    pass: 0,
                    node: 0,
                    found: 0,
                },
                Err(err) => XmlState::Failed(format!("xml: {err}\n")),
            };
            if expired(deadline) {
                return None;
            }
        }
        let passes = self.passes;
        match &mut self.state {
            XmlState::Start(_) | XmlState::Taken => None,
            XmlState::Failed(text) => Some(text.clone()),
            XmlState::Searching {
                doc,
                pass,
                node,
                found,
            } => loop {
                for _ in 0..STEPS_PER_CHECK {
                    if *pass >= passes {
                        return Some(format!("xml: {} passes, {} matches\n", passes, found));
                    }
                    match doc
                        .borrow_dependent()
                        .get_node(roxmltree::NodeId::new(*node))
                    {
                        Some(n) => {
                            let hit = if n.is_element() {
                                n.attribute("key") == Some("k42")
                            } else {
                                n.text().is_some_and(|t| t.contains("t7"))
                            };
                            *found += u64::from(hit);
                            *node += 1;
                        }
                        None => {
                            *pass += 1;
                            *node = 0;
                        }
                    }
                }
                if expired(deadline) {
                    return None;
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn fib(n: u64) -> u64 {
        if n < 2 {
            n
        } else {
            fib(n - 1) + fib(n - 2)
        }
    }

    #[test]
    fn fib_is_right_whole_and_in_slices() {
        let whole = Fib::new(20).run(None).unwrap();
        assert_eq!(whole, format!("fib(20) = {}\n", fib(20)));
        let mut sliced = Fib::new(27);
        let mut slices = 0;
        let result = loop {
            slices += 1;
            // A deadline in the past: one check's worth of steps per call.
            if let Some(r) = sliced.run(Some(Instant::now() - Duration::from_millis(1))) {
                break r;
            }
        };
        assert_eq!(result, format!("fib(27) = {}\n", fib(27)));
        assert!(slices > 10, "{slices} slices");
    }

    #[test]
    fn xml_search_counts_the_same_whole_and_in_slices() {
        let text: Arc<str> = catalogue(300).into();
        let whole = Xml::new(Arc::clone(&text), 3).run(None).unwrap();
        let mut sliced = Xml::new(text, 3);
        let result = loop {
            if let Some(r) = sliced.run(Some(Instant::now() - Duration::from_millis(1))) {
                break r;
            }
        };
        assert_eq!(whole, result);
        // k42 appears for items 42, 139, 236: three elements per pass.
        assert!(whole.starts_with("xml: 3 passes, "), "{whole}");
        let matches: u64 = whole.split_whitespace().nth(3).unwrap().parse().unwrap();
        assert!(matches >= 9, "{whole}");
    }
}
