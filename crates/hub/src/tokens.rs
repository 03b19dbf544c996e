//! Upload tokens: created by a hub command, shown once, stored only as the sha256 of the
//! secret, and revocable. A token's secret is 32 random bytes, so looking it up by its hash is
//! as good as comparing secrets in constant time: the hash reveals nothing to guess with.

use crate::error::{StoreError, TokenError};
use crate::sql::{Row, SqlValue};
use crate::{Store, hex_sha256};

/// The prefix of every secret, so a leaked one is recognisable (and secret scanners can match).
const PREFIX: &str = "llmib_";

/// A token just created: the only time its secret is seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewToken {
    /// Its id, to revoke it by.
    pub id: i64,
    /// The secret to give the uploader. Not stored: lost if not copied now.
    pub secret: String,
}

/// A token as the hub lists it (never its secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenInfo {
    /// Its id.
    pub id: i64,
    /// The name it was created with (who or what uses it).
    pub name: String,
    /// When it was created (RFC 3339).
    pub created_at: String,
    /// When it was revoked, if it was.
    pub revoked_at: Option<String>,
}

/// A fresh secret: the prefix and 32 random bytes in hex.
fn new_secret() -> Result<String, StoreError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| StoreError::Randomness(e.to_string()))?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("{PREFIX}{hex}"))
}

/// A token's row as listed.
fn token_info(r: &Row) -> Result<TokenInfo, StoreError> {
    Ok(TokenInfo {
        id: r.i64(0)?,
        name: r.text(1)?,
        created_at: r.text(2)?,
        revoked_at: r.opt_text(3)?,
    })
}

impl Store {
    /// Creates a token named `name` and returns its secret (shown once).
    pub fn create_token(&mut self, name: &str) -> Result<NewToken, StoreError> {
        let secret = new_secret()?;
        let rows = self.db().query(
            "INSERT INTO tokens (name, secret_sha256, created_at) VALUES (?, ?, ?) RETURNING id",
            &[
                name.into(),
                hex_sha256(secret.as_bytes()).into(),
                llmib_core::now_rfc3339().into(),
            ],
        )?;
        let id = rows
            .first()
            .ok_or_else(|| StoreError::Column {
                column: 0,
                detail: "INSERT … RETURNING id gave no row".into(),
            })?
            .i64(0)?;
        Ok(NewToken { id, secret })
    }

    /// Every token, oldest first, revoked ones included.
    pub fn list_tokens(&self) -> Result<Vec<TokenInfo>, StoreError> {
        self.db()
            .query(
                "SELECT id, name, created_at, revoked_at FROM tokens ORDER BY id",
                &[],
            )?
            .iter()
            .map(token_info)
            .collect()
    }

    /// Revokes a token: it no longer uploads (or reads). Revoking twice keeps the first time.
    pub fn revoke_token(&mut self, id: i64) -> Result<(), StoreError> {
        let n = self.db().execute(
            "UPDATE tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?",
            &[llmib_core::now_rfc3339().into(), SqlValue::Int(id)],
        )?;
        if n == 0 {
            return Err(StoreError::NoSuchToken(id));
        }
        Ok(())
    }

    /// The id of the live token whose secret this is.
    pub fn check_token(&self, secret: Option<&str>) -> Result<Result<i64, TokenError>, StoreError> {
        let Some(secret) = secret.map(str::trim).filter(|s| !s.is_empty()) else {
            return Ok(Err(TokenError::Missing));
        };
        let rows = self.db().query(
            "SELECT id, name, revoked_at FROM tokens WHERE secret_sha256 = ?",
            &[hex_sha256(secret.as_bytes()).into()],
        )?;
        let Some(r) = rows.first() else {
            return Ok(Err(TokenError::Unknown));
        };
        Ok(match r.opt_text(2)? {
            Some(_) => Err(TokenError::Revoked(r.text(1)?)),
            None => Ok(r.i64(0)?),
        })
    }

    /// Whether a reader may read: always when reading is open, else with a live token.
    pub fn authorize_read(&self, secret: Option<&str>) -> Result<(), StoreError> {
        if !self.settings.read_needs_token {
            return Ok(());
        }
        self.check_token(secret)?
            .map(|_| ())
            .map_err(StoreError::Unauthorized)
    }
}
