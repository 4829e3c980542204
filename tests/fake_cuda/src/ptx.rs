//! PTX text as the double reads it: each `.entry NAME(.param .TYPE p, ...)` gives a kernel and
//! its parameter sizes (arrays `.param .align A .b8 p[N]` too), and the `.shared ... [BYTES];` declarations in its body its static
//! shared memory.

/// A kernel declared in PTX text: its name, parameter sizes and static shared memory.
#[derive(Debug, PartialEq)]
pub(crate) struct Entry {
    pub name: String,
    pub params: Vec<usize>,
    pub static_shared: u32,
}

/// Kernels declared in PTX text.
pub(crate) fn parse_entries(text: &str) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(".entry") {
        rest = &rest[at + ".entry".len()..];
        let name: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '$')
            .collect();
        let params = match (rest.find('('), rest.find(')')) {
            (Some(open), Some(close)) if open < close => rest[open + 1..close]
                .split(',')
                .filter_map(|p| {
                    let words: Vec<&str> = p.split_whitespace().collect();
                    let ty = words
                        .iter()
                        .find(|w| w.starts_with('.') && !matches!(**w, ".param" | ".align"))?;
                    let bits: usize = ty
                        .trim_start_matches(|c: char| c == '.' || c.is_ascii_alphabetic())
                        .parse()
                        .ok()?;
                    // An array parameter (`.param .align 64 .b8 map[128]`) has `count` items.
                    let count = match words.last().and_then(|w| w.split_once('[')) {
                        Some((_, n)) => n.trim_end_matches(']').parse().ok()?,
                        None => 1,
                    };
                    Some(bits / 8 * count)
                })
                .collect(),
            _ => Vec::new(),
        };
        let body = &rest[..rest.find(".entry").unwrap_or(rest.len())];
        out.push(Entry {
            name,
            params,
            static_shared: static_shared(body),
        });
    }
    out
}

/// The bytes of the `.shared ... .b8 NAME[BYTES];` declarations in a kernel's text.
fn static_shared(body: &str) -> u32 {
    body.match_indices(".shared")
        .filter_map(|(at, _)| {
            let decl = &body[at..at + body[at..].find(';')?];
            let open = decl.find('[')?;
            let close = decl.find(']')?;
            decl.get(open + 1..close)?.trim().parse::<u32>().ok()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_entries_give_names_and_parameter_sizes() {
        let ptx = ".visible .entry add_one(\n .param .u64 x,\n .param .u32 n, .param .f16 h)\n{}\n\
                   .visible .entry empty()\n{ ret; }";
        let entries: Vec<(String, Vec<usize>)> = parse_entries(ptx)
            .into_iter()
            .map(|e| (e.name, e.params))
            .collect();
        assert_eq!(
            entries,
            vec![
                ("add_one".to_owned(), vec![8, 4, 2]),
                ("empty".to_owned(), vec![])
            ]
        );
    }

    #[test]
    fn ptx_shared_declarations_give_static_shared_memory() {
        let ptx = ".visible .entry a(.param .u64 x)\n{\n.shared .align 16 .b8 buf[1024];\n\
                   .shared .align 4 .b8 more[24];\nret;\n}\n.visible .entry b()\n{ ret; }";
        let entries = parse_entries(ptx);
        assert_eq!(entries[0].static_shared, 1048);
        assert_eq!(entries[1].static_shared, 0);
    }
}
