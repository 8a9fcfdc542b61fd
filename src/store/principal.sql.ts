/**
 * The SQL that builds a run's principal from its context, as `principalKey` (src/access/principal.ts)
 * does in code: `<channel>:<user id>`, with `<account>:` before the user id for a named account.
 * Budgets' usage and history search's `conversation_principals` both read it.
 */

/** SQLite: `context` is the JSON text column (`new.context` in a trigger). */
export const sqlitePrincipalSql = (context: string) =>
  `json_extract(${context}, '$.channel') || ':'
        || COALESCE(json_extract(${context}, '$.accountName') || ':', '')
        || json_extract(${context}, '$.principal.id')`;

/** PostgreSQL: `context` is a JSONB expression. */
export const postgresPrincipalSql = (context: string) =>
  `(${context} ->> 'channel') || ':' || COALESCE((${context} ->> 'accountName') || ':', '')
            || (${context} -> 'principal' ->> 'id')`;
