//! Where a schema error is: positions, the statement text, refusals naming a clause.

use sqlparser::ast::{Ident, ObjectName};
use sqlparser::dialect::GenericDialect;
use sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};

use super::SchemaError;

/// A place in the schema text (line and column 1-based; 0 when unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(super) struct Pos {
    pub(super) line: u64,
    pub(super) column: u64,
}

impl From<Location> for Pos {
    fn from(l: Location) -> Self {
        Pos {
            line: l.line,
            column: l.column,
        }
    }
}

pub(super) fn err(at: Pos, message: impl Into<String>) -> SchemaError {
    SchemaError {
        line: at.line,
        column: at.column,
        message: message.into(),
    }
}

/// The schema's tokens (comments and whitespace dropped), to find where a clause's keywords
/// are: the AST keeps positions for identifiers and expressions only.
pub(super) struct Source {
    pub(super) tokens: Vec<TokenWithSpan>,
}

impl Source {
    pub(super) fn new(sql: &str) -> Self {
        let tokens = Tokenizer::new(&GenericDialect {}, sql)
            .tokenize_with_location()
            .unwrap_or_default()
            .into_iter()
            .filter(|t| !matches!(t.token, Token::Whitespace(_)))
            .collect();
        Source { tokens }
    }

    pub(super) fn pos(&self, i: usize) -> Pos {
        self.tokens
            .get(i)
            .map_or(Pos::default(), |t| t.span.start.into())
    }

    /// Index of the first token at or after `at`.
    pub(super) fn index_at(&self, at: Pos) -> usize {
        self.tokens
            .partition_point(|t| Pos::from(t.span.start) < at)
    }

    pub(super) fn is_word(&self, i: usize, word: &str) -> bool {
        matches!(self.tokens.get(i).map(|t| &t.token),
            Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
    }

    pub(super) fn is_semicolon(&self, i: usize) -> bool {
        matches!(self.tokens.get(i).map(|t| &t.token), Some(Token::SemiColon))
    }

    pub(super) fn words_at(&self, i: usize, words: &[&str]) -> bool {
        words
            .iter()
            .enumerate()
            .all(|(k, w)| self.is_word(i + k, w))
    }

    /// The index where the keyword sequence `words` first occurs at or after token `from`,
    /// within the statement.
    pub(super) fn find_index(&self, from: usize, words: &[&str]) -> Option<usize> {
        (from..self.tokens.len())
            .take_while(|i| !self.is_semicolon(*i))
            .find(|i| self.words_at(*i, words))
    }

    /// Where the keyword sequence `words` first occurs at or after `at`, within the statement.
    pub(super) fn find_after(&self, at: Pos, words: &[&str]) -> Option<Pos> {
        self.find_index(self.index_at(at), words)
            .map(|i| self.pos(i))
    }

    /// Where the keyword sequence `words` last occurs before `at`, within the statement.
    pub(super) fn find_before(&self, at: Pos, words: &[&str]) -> Option<Pos> {
        (0..self.index_at(at))
            .rev()
            .take_while(|i| !self.is_semicolon(*i))
            .find(|i| self.words_at(*i, words))
            .map(|i| self.pos(i))
    }

    /// The first token at or after `at` (the type after a column name).
    pub(super) fn next(&self, at: Pos) -> Pos {
        self.pos(self.index_at(at))
    }

    /// The closing parenthesis of the first parenthesised list after `at` (the end of a
    /// CREATE TABLE's column list), or `at`.
    pub(super) fn after_parens(&self, at: Pos) -> Pos {
        let mut depth = 0usize;
        for i in self.index_at(at)..self.tokens.len() {
            match self.tokens[i].token {
                Token::LParen => depth += 1,
                Token::RParen if depth == 1 => return self.pos(i),
                Token::RParen => depth = depth.saturating_sub(1),
                Token::SemiColon => break,
                _ => {}
            }
        }
        at
    }

    /// The first token of each statement, in order (statements are separated by `;`; empty
    /// ones are skipped, as the parser skips them).
    pub(super) fn statement_starts(&self) -> Vec<Pos> {
        let mut out = Vec::new();
        let mut at_start = true;
        for (i, t) in self.tokens.iter().enumerate() {
            match t.token {
                Token::SemiColon => at_start = true,
                Token::EOF => {}
                _ if at_start => {
                    out.push(self.pos(i));
                    at_start = false;
                }
                _ => {}
            }
        }
        out
    }
}

/// A refusal: `clause` is not supported (`why`), at the keyword `words` searched forward from
/// `at` (or at `at` when it is not found).
pub(super) fn refuse(
    src: &Source,
    at: Pos,
    words: &[&str],
    clause: &str,
    why: &str,
) -> SchemaError {
    let p = src.find_after(at, words).unwrap_or(at);
    err(p, format!("{clause} is not supported ({why})"))
}

/// Like [`refuse`], the keyword searched backward from `at` (clauses before a name).
pub(super) fn refuse_before(
    src: &Source,
    at: Pos,
    words: &[&str],
    clause: &str,
    why: &str,
) -> SchemaError {
    let p = src
        .find_before(at, words)
        .or_else(|| src.find_after(at, words))
        .unwrap_or(at);
    err(p, format!("{clause} is not supported ({why})"))
}

/// The name of an identifier: unquoted folded to lower case, quoted as written.
pub(super) fn ident_name(i: &Ident) -> String {
    if i.quote_style.is_some() {
        i.value.clone()
    } else {
        i.value.to_ascii_lowercase()
    }
}

pub(super) fn ident_pos(i: &Ident) -> Pos {
    i.span.start.into()
}

/// A table or index name: one identifier (a schema-qualified `s.t` is refused: a Db has one
/// namespace of tables).
pub(super) fn object_name(n: &ObjectName, fallback: Pos) -> Result<(String, Pos), SchemaError> {
    let at =
        n.0.first()
            .and_then(|p| p.as_ident())
            .map_or(fallback, ident_pos);
    match n.0.as_slice() {
        [part] => match part.as_ident() {
            Some(i) => Ok((ident_name(i), at)),
            None => Err(err(at, format!("name {n}: only a plain identifier is supported"))),
        },
        _ => Err(err(
            at,
            format!("schema-qualified name {n} is not supported (a Db has one namespace of tables: write the table name alone)"),
        )),
    }
}
