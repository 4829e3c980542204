//! Parsing of GPU items: `device_binary` and the `launch` statement.

use std::path::PathBuf;

use super::super::model::{
    BinaryFormat, DeviceBinary, Expr, Launch, LaunchArg, LaunchSetting, LaunchSettingKind,
    LaunchSettings, SettingShape, SettingValue, Stmt,
};
use super::super::source_map::{DeviceBinarySpans, ExprSpans, Span, StmtSpans};
use super::lexer::Tok;
use super::{PResult, ParseError, Parser, ticks};

/// Keys of a `device_binary` item.
const BINARY_KEYS: &[&str] = &["format", "data", "file", "kernels", "}"];

impl Parser<'_> {
    /// `device_binary NAME { format F; data b"..." | file "PATH"; kernels [K, ...]; }`.
    pub(super) fn device_binary(&mut self) -> PResult<(DeviceBinary, DeviceBinarySpans)> {
        let start = self.expect_kw("device_binary")?;
        let (name, name_span) = self.name("the device binary's name")?;
        let open = self.expect_punct("{")?;
        let mut spans = DeviceBinarySpans {
            name: name_span,
            ..Default::default()
        };
        let (mut format, mut data, mut kernels) = (None, None, None);
        while !self.is_punct("}") {
            let key_span = self.span();
            if matches!(self.peek(), Tok::Eof) {
                return Err(self.unclosed(open));
            }
            let (key, _) = self.word(BINARY_KEYS)?;
            match key.as_str() {
                "format" if format.is_none() => {
                    let (word, s) = self.word(&["cubin", "fatbin", "ptx"])?;
                    let f = BinaryFormat::from_keyword(&word).ok_or_else(|| {
                        ParseError::new(
                            s,
                            format!("unknown device binary format `{word}`"),
                            ticks(&["cubin", "fatbin", "ptx"]),
                        )
                    })?;
                    format = Some(f);
                    spans.format = s;
                }
                "data" if data.is_none() => match self.peek().clone() {
                    Tok::Bytes(b) => {
                        spans.data = self.bump();
                        data = Some(b);
                    }
                    _ => {
                        return Err(
                            self.unexpected(vec!["a byte string literal `b\"...\"`".to_owned()])
                        );
                    }
                },
                "file" if data.is_none() => {
                    let (path, s) = self.string("the file's path as a string literal")?;
                    spans.data = s;
                    data = Some(self.read_binary_file(&path, s)?);
                }
                "kernels" if kernels.is_none() => {
                    self.expect_punct("[")?;
                    let names = self.list("]", |p| p.name("a kernel entry name"))?;
                    spans.kernels = names.iter().map(|(_, s)| *s).collect();
                    kernels = Some(names.into_iter().map(|(n, _)| n).collect());
                }
                "format" | "kernels" => {
                    return Err(ParseError::new(
                        key_span,
                        format!("duplicate `{key}`"),
                        vec![],
                    ));
                }
                "data" | "file" => {
                    return Err(ParseError::new(
                        key_span,
                        "the image is already given: use one `data` or one `file`".to_owned(),
                        vec![],
                    ));
                }
                _ => {
                    return Err(ParseError::new(
                        key_span,
                        format!(
                            "expected one of `format`, `data`, `file`, `kernels`, or `}}`, found `{key}`"
                        ),
                        ticks(BINARY_KEYS),
                    ));
                }
            }
            self.expect_punct(";")?;
        }
        let close = self.expect_punct("}")?;
        spans.span = start.to(close);
        let missing = |what: &str| {
            ParseError::new(
                close,
                format!("missing `{what};` in `device_binary`"),
                vec![],
            )
        };
        let format = format.ok_or_else(|| missing("format cubin|fatbin|ptx"))?;
        let data = data.ok_or_else(|| missing("data b\"...\"` or `file \"PATH\""))?;
        let kernels = kernels.ok_or_else(|| missing("kernels [NAME, ...]"))?;
        Ok((
            DeviceBinary {
                name,
                format,
                data,
                kernels,
            },
            spans,
        ))
    }

    /// Reads the image named by a `file` path: given in memory, or read relative to the IR
    /// file's directory.
    fn read_binary_file(&self, path: &str, span: Span) -> PResult<Vec<u8>> {
        if let Some(data) = self.files.and_then(|files| files.get(path)) {
            return Ok(data.to_vec());
        }
        let full: PathBuf = match self.dir {
            Some(dir) => dir.join(path),
            None => PathBuf::from(path),
        };
        std::fs::read(&full).map_err(|e| {
            ParseError::new(
                span,
                format!("cannot read device binary file `{}`: {e}", full.display()),
                vec![],
            )
            .with_note(
                "a relative path is read from the directory of the IR file (the current \
                 directory for IR given as text)"
                    .to_owned(),
            )
        })
    }

    /// `launch BINARY.KERNEL[key=value, ...](args)` (without the `;`).
    pub(super) fn launch(&mut self, spans: &mut StmtSpans) -> PResult<Stmt> {
        self.expect_kw("launch")?;
        let (binary, binary_span) = self.name("the device binary's name")?;
        self.expect_punct(".")?;
        let (kernel, kernel_span) = self.name("the kernel's entry name")?;
        spans.name = Some(binary_span.to(kernel_span));
        let open = self.expect_punct("[")?;
        let keys: Vec<&str> = LaunchSettingKind::ALL.iter().map(|k| k.keyword()).collect();
        let mut settings = LaunchSettings::new();
        // Each setting's expression spans, by kind (source-map order is kind order).
        let mut setting_spans: Vec<(LaunchSettingKind, Vec<ExprSpans>)> = Vec::new();
        while !self.is_punct("]") {
            if matches!(self.peek(), Tok::Eof) {
                return Err(self.unexpected(vec!["`]`".to_owned()]).with_note(format!(
                    "the launch configuration opened at {} is not closed",
                    self.line_col(open)
                )));
            }
            let (key, key_span) = self.word(&keys)?;
            let Some(kind) = LaunchSettingKind::from_keyword(&key) else {
                return Err(ParseError::new(
                    key_span,
                    format!(
                        "unknown launch setting `{key}`; the settings are {}",
                        ticks(&keys).join(", ")
                    ),
                    ticks(&keys),
                ));
            };
            self.expect_punct("=")?;
            let value_span = self.span();
            let (value, exprs) = match kind.shape() {
                SettingShape::Dims => {
                    self.expect_punct("(")?;
                    let (items, s): (Vec<Expr>, Vec<ExprSpans>) =
                        self.list(")", |p| p.expr())?.into_iter().unzip();
                    (SettingValue::Dims(items), s)
                }
                SettingShape::Expr => {
                    let (e, s) = self.expr()?;
                    (SettingValue::Expr(e), vec![s])
                }
                SettingShape::Keyword(words) => {
                    let (w, _) = self.word(words)?;
                    (SettingValue::Keyword(w), Vec::new())
                }
            };
            let setting = LaunchSetting::new(kind, value)
                .map_err(|message| ParseError::new(value_span, message, vec![]))?;
            if settings.insert(setting).is_err() {
                return Err(ParseError::new(
                    key_span,
                    format!("duplicate launch setting `{key}`"),
                    vec![],
                ));
            }
            setting_spans.push((kind, exprs));
            if !self.eat_punct(",") && !self.is_punct("]") {
                return Err(self.unexpected(vec!["`,`".into(), "`]`".into()]));
            }
        }
        let close = self.expect_punct("]")?;
        for required in LaunchSettingKind::ALL.into_iter().filter(|k| k.required()) {
            if settings.get(required).is_none() {
                return Err(ParseError::new(
                    open.to(close),
                    format!(
                        "missing `{}=(...)` in the launch configuration",
                        required.keyword()
                    ),
                    vec![],
                ));
            }
        }
        self.expect_punct("(")?;
        let (args, arg_spans): (Vec<LaunchArg>, Vec<Vec<ExprSpans>>) =
            self.list(")", |p| p.launch_arg())?.into_iter().unzip();
        setting_spans.sort_by_key(|(kind, _)| *kind);
        spans.exprs = setting_spans
            .into_iter()
            .flat_map(|(_, s)| s)
            .chain(arg_spans.into_iter().flatten())
            .collect();
        Ok(Stmt::Launch(Box::new(Launch {
            binary,
            kernel,
            settings,
            args,
        })))
    }
}
