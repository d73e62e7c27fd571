//! How the clap declarations of this folder are read: each group of settings declares its
//! variables once (`#[arg(long, env = "…", default_value = "…")]`, a doc comment for its
//! meaning, a `value_parser` for its format and range), and this module reads them through a
//! lookup, names the variable of a refused value, and says what the documents must show.
//!
//! The lookup, not clap, decides where values come from: the process environment for
//! `floor`, a map for a test. Each variable `get` returns becomes `--<long>=<value>`, and the
//! arguments are parsed with their `env` taken off, so clap never reads the process
//! environment behind the lookup's back.

use std::ffi::OsStr;
use std::fmt;

use clap::error::{ContextKind, ContextValue};
use clap::{Args, Command, FromArgMatches};

use super::error::ConfigError;

/// Why a `value_parser` refused a value: what it expects, and the item at fault when the
/// value is a list (the error names the item, not the whole list).
#[derive(Debug)]
pub(super) struct Refused {
    expected: &'static str,
    item: Option<String>,
}

impl Refused {
    pub(super) fn expected(expected: &'static str) -> Self {
        Self { expected, item: None }
    }

    pub(super) fn item(item: &str, expected: &'static str) -> Self {
        Self { expected, item: Some(item.to_owned()) }
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.expected)
    }
}

impl std::error::Error for Refused {}

/// The arguments the group `T` declares, in a command of their own: it has no subcommand,
/// no help and no version, so nothing but the declared variables can be given to it.
fn declared<T: Args>() -> Command {
    T::augment_args(
        Command::new("floor-configuration").no_binary_name(true).disable_help_flag(true).disable_version_flag(true),
    )
}

/// The value of `name` through `get`, trimmed; blank counts as unset, so `VAR=` in a compose
/// file or an env template means the default.
pub(super) fn value_of(get: &dyn Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    get(name).map(|value| value.trim().to_owned()).filter(|value| !value.is_empty())
}

/// Reads the variables the group `T` declares through `get`, each through its declared
/// parser, the unset ones at their declared default. A value its parser refuses, or any other
/// failure, is one `ConfigError` naming the variable.
pub(super) fn read<T: Args + FromArgMatches>(get: &dyn Fn(&str) -> Option<String>) -> Result<T, ConfigError> {
    let declared = declared::<T>();
    let mut given = Vec::new();
    for arg in declared.get_arguments() {
        let (Some(long), Some(name)) = (arg.get_long(), arg.get_env().and_then(OsStr::to_str)) else { continue };
        if let Some(value) = value_of(get, name) {
            // `--long=value` keeps a value that starts with `-` a value.
            given.push(format!("--{long}={value}"));
        }
    }
    let matches = declared
        .clone()
        .mut_args(|arg| arg.env(None))
        .try_get_matches_from(given)
        .map_err(|err| refusal(&declared, &err))?;
    T::from_arg_matches(&matches).map_err(|err| refusal(&declared, &err))
}

/// The one-line `ConfigError` of clap's `err`: the variable of the refused argument, the value
/// (or the item of a list) and what its parser expected.
fn refusal(declared: &Command, err: &clap::Error) -> ConfigError {
    let context = |kind| match err.get(kind) {
        Some(ContextValue::String(text)) => Some(text.as_str()),
        _ => None,
    };
    // An argument shows as clap's error shows it only once its command is built.
    let mut built = declared.clone();
    built.build();
    let name = context(ContextKind::InvalidArg).and_then(|shown| {
        let arg = built.get_arguments().find(|arg| arg.to_string() == shown)?;
        Some(arg.get_env()?.to_string_lossy().into_owned())
    });
    let refused = std::error::Error::source(err).and_then(|source| source.downcast_ref::<Refused>());
    match (name, context(ContextKind::InvalidValue), refused) {
        (Some(name), Some(value), Some(refused)) => ConfigError::Invalid {
            name,
            value: refused.item.clone().unwrap_or_else(|| value.to_owned()),
            expected: refused.expected,
        },
        // Only a declaration clap rejects gets here, which the tests of this folder catch.
        _ => ConfigError::Unreadable(err.to_string().lines().next().unwrap_or_default().to_owned()),
    }
}

/// One variable as the README and docs/operations.md must show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocumentedVariable {
    pub name: String,
    /// The default as the documents write it: the declared default in backticks (`` `10s` ``),
    /// `empty` for an empty list, the text of a last paragraph `Default: …` of the variable's
    /// doc comment when the default is no value of its own (`http://localhost:<PORT>`), else
    /// `unset`.
    pub default: String,
}

/// The paragraph of a doc comment that gives, in the documents' words, a default that is not
/// a value of the variable: one that depends on another setting, or that code elsewhere holds.
const DOCUMENTED_DEFAULT: &str = "Default: ";

/// The default an argument's doc comment writes in its last paragraph `Default: …`, if any.
fn written_default(arg: &clap::Arg) -> Option<String> {
    let help = arg.get_long_help().or(arg.get_help())?.to_string();
    let last = help.rsplit("\n\n").next()?;
    last.strip_prefix(DOCUMENTED_DEFAULT).map(|text| text.trim().to_owned())
}

/// Every variable the group `T` declares, with its default as the documents write it.
pub(super) fn documented<T: Args>() -> Vec<DocumentedVariable> {
    declared::<T>()
        .get_arguments()
        .filter_map(|arg| {
            let name = arg.get_env()?.to_string_lossy().into_owned();
            let written = written_default(arg);
            let declared = arg.get_default_values().first().map(|value| value.to_string_lossy().into_owned());
            let default = match (written, declared) {
                (Some(written), _) => written,
                (None, Some(value)) if value.is_empty() => "empty".to_owned(),
                (None, Some(value)) => format!("`{value}`"),
                (None, None) => "unset".to_owned(),
            };
            Some(DocumentedVariable { name, default })
        })
        .collect()
}

/// `true` or `false`, as a person writes it in an env file.
pub(super) fn flag(text: &str) -> Result<bool, Refused> {
    match text.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(Refused::expected("true or false")),
    }
}

/// The comma-separated items of `list`, each read by `parse`; blank items are skipped. A
/// refusal names the item at fault.
pub(super) fn comma_separated<T>(
    list: &str,
    expected: &'static str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Vec<T>, Refused> {
    list.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| parse(item).ok_or_else(|| Refused::item(item, expected)))
        .collect()
}

/// The declarations of `T` that break the rules `read` and `documented` rely on: each
/// argument has a long name and a variable, and a written default only where there is no
/// declared one.
#[cfg(test)]
pub(super) fn malformed<T: Args>() -> Vec<String> {
    declared::<T>()
        .get_arguments()
        .filter_map(|arg| {
            let id = arg.get_id();
            if arg.get_long().is_none() || arg.get_env().is_none() {
                return Some(format!("{id} has no long name or no variable"));
            }
            (written_default(arg).is_some() && !arg.get_default_values().is_empty())
                .then(|| format!("{id} has a declared default and a written one"))
        })
        .collect()
}
