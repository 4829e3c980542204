//! Module-level items: the `module` header, `extern fn` and `import module` items.

use super::super::model::*;
use super::super::source_map::*;
use super::lexer::Tok;
use super::{PResult, ParseError, Parser, ticks};

impl Parser<'_> {
    pub(super) fn module(&mut self) -> PResult<(Module, SourceMap)> {
        let mut map = SourceMap::default();
        if !self.is_kw("module") {
            return Err(self
                .unexpected(vec!["`module`".to_owned()])
                .with_note("a module starts with `module NAME;`".to_owned()));
        }
        self.bump();
        let (name, name_span) = self.name("a module name")?;
        map.module_name = name_span;
        self.expect_punct(";")?;
        let mut m = Module::new(name);
        loop {
            let mut doc_lines = Vec::new();
            let doc_start = self.span();
            while let Tok::Doc(d) = self.peek().clone() {
                doc_lines.push(d);
                self.bump();
            }
            if !doc_lines.is_empty() && !self.is_kw("fn") {
                return Err(ParseError::new(
                    doc_start,
                    format!(
                        "a doc comment must be followed by `fn`, found {}",
                        self.peek().describe()
                    ),
                    vec!["`fn`".to_owned()],
                ));
            }
            let start = self.span();
            if matches!(self.peek(), Tok::Eof) {
                break;
            } else if self.is_kw("fn") {
                let (f, spans) = self.function(doc_lines.join("\n"))?;
                m.functions.push(f);
                map.functions.push(spans);
            } else if self.eat_kw("system_lib_prefix") {
                let (prefix, _) = self.string("the prefix as a string literal")?;
                let end = self.expect_punct(";")?;
                if m.system_lib_prefix.is_some() {
                    return Err(ParseError::new(
                        start.to(end),
                        "duplicate `system_lib_prefix`".to_owned(),
                        vec![],
                    ));
                }
                m.system_lib_prefix = Some(prefix);
                map.system_lib_prefix = Some(start.to(end));
            } else if self.is_kw("extern") {
                m.externs.push(self.extern_fn()?);
                map.externs
                    .push(start.to(Span::new(self.prev_end(), self.prev_end())));
            } else if self.is_kw("imported_module") {
                let (im, spans) = self.imported_module()?;
                m.imported_modules.push(im);
                map.imported_modules.push(spans);
            } else if self.is_kw("device_binary") {
                let (b, spans) = self.device_binary()?;
                m.device_binaries.push(b);
                map.device_binaries.push(spans);
            } else if self.eat_kw("import") {
                let (label, span) = self.name("an imported module label")?;
                self.expect_punct(";")?;
                m.imports.push(label);
                map.imports.push(span);
            } else {
                return Err(self.unexpected(ticks(&[
                    "fn",
                    "extern",
                    "imported_module",
                    "device_binary",
                    "import",
                    "system_lib_prefix",
                ])));
            }
        }
        Ok((m, map))
    }

    pub(super) fn extern_fn(&mut self) -> PResult<ExternFn> {
        self.expect_kw("extern")?;
        self.expect_kw("fn")?;
        let (name, _) = self.name("the extern function's name")?;
        self.expect_punct("(")?;
        let params = self.list(")", |p| p.scalar_type())?;
        let ret = if self.eat_punct("->") {
            Some(self.scalar_type()?)
        } else {
            None
        };
        let errors = if self.eat_kw("nonzero_is_raised") {
            ErrorConvention::NonZeroIsRaised
        } else {
            ErrorConvention::None
        };
        if !self.is_punct(";") {
            let mut expected = vec!["`;`".to_owned()];
            if errors == ErrorConvention::None {
                expected.insert(0, "`nonzero_is_raised`".to_owned());
                if ret.is_none() {
                    expected.insert(0, "`->`".to_owned());
                }
            }
            return Err(self.unexpected(expected));
        }
        self.bump();
        Ok(ExternFn {
            name,
            params,
            ret,
            errors,
        })
    }

    pub(super) fn imported_module(&mut self) -> PResult<(ImportedModule, ImportedModuleSpans)> {
        let start = self.expect_kw("imported_module")?;
        let (label, label_span) = self.name("the imported module's label")?;
        let open = self.expect_punct("{")?;
        let mut spans = ImportedModuleSpans {
            label: label_span,
            ..Default::default()
        };
        let (mut kind, mut payload, mut imports) = (None, None, None);
        while !self.is_punct("}") {
            let key_span = self.span();
            if matches!(self.peek(), Tok::Eof) {
                return Err(self.unclosed(open));
            }
            let (key, _) = self.word(&["kind", "payload", "imports", "}"])?;
            match key.as_str() {
                "kind" if kind.is_none() => {
                    let (k, s) = self.string("the kind as a string literal")?;
                    kind = Some(k);
                    spans.kind = s;
                }
                "payload" if payload.is_none() => match self.peek().clone() {
                    Tok::Bytes(b) => {
                        spans.payload = self.bump();
                        payload = Some(b);
                    }
                    _ => {
                        return Err(
                            self.unexpected(vec!["a byte string literal `b\"...\"`".to_owned()])
                        );
                    }
                },
                "imports" if imports.is_none() => {
                    self.expect_punct("[")?;
                    let labels = self.list("]", |p| p.name("an imported module label"))?;
                    spans.imports = labels.iter().map(|(_, s)| *s).collect();
                    imports = Some(labels.into_iter().map(|(l, _)| l).collect());
                }
                "kind" | "payload" | "imports" => {
                    return Err(ParseError::new(
                        key_span,
                        format!("duplicate `{key}`"),
                        vec![],
                    ));
                }
                _ => {
                    return Err(ParseError::new(
                        key_span,
                        format!(
                            "expected one of `kind`, `payload`, `imports`, or `}}`, found `{key}`"
                        ),
                        ticks(&["kind", "payload", "imports", "}"]),
                    ));
                }
            }
            self.expect_punct(";")?;
        }
        let close = self.expect_punct("}")?;
        spans.span = start.to(close);
        let kind = kind.ok_or_else(|| {
            ParseError::new(
                close,
                "missing `kind \"...\";` in `imported_module`".to_owned(),
                vec![],
            )
        })?;
        let payload = payload.ok_or_else(|| {
            ParseError::new(
                close,
                "missing `payload b\"...\";` in `imported_module`".to_owned(),
                vec![],
            )
        })?;
        Ok((
            ImportedModule {
                label,
                kind,
                payload,
                imports: imports.unwrap_or_default(),
            },
            spans,
        ))
    }

    pub(super) fn unclosed(&self, open: Span) -> ParseError {
        self.unexpected(vec!["`}`".to_owned()]).with_note(format!(
            "the block opened at {} is not closed",
            self.line_col(open)
        ))
    }
}
