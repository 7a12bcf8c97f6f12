//! `[store]`: the backend choice, the URL's layers, the composition row, and the errors.

use super::*;

#[test]
fn files_is_the_default_and_the_row_stays_the_file_plugin() {
    let settings = load_with("", &[], &Overrides::default()).unwrap();
    assert_eq!(settings.store.backend.value, StoreBackend::Files);
    assert_eq!(settings.store.url.value, None);
    let row = settings
        .composition
        .rows
        .iter()
        .find(|r| r.id == PERSISTENCE_ROW)
        .unwrap();
    assert_eq!(row.plugin, "session-persistence-jsonl");
}

#[test]
fn postgres_mounts_its_plugin_and_the_environment_url_wins() {
    let settings = load_with(
        "[store]\nbackend = \"postgres\"\nurl = \"postgres://a:pw@file/db\"\n\
         password_env = \"DB_PW\"\n",
        &[("DSH_DATABASE_URL", "postgres://b@env/db")],
        &Overrides::default(),
    )
    .unwrap();
    let store = &settings.store;
    assert_eq!(
        store.backend,
        Sourced::new(StoreBackend::Postgres, Source::File { line: 2 })
    );
    assert_eq!(
        store.url,
        Sourced::new(
            Some(DatabaseUrl::new("postgres://b@env/db")),
            Source::Env {
                var: "DSH_DATABASE_URL"
            }
        )
    );
    assert_eq!(store.password_env.value.as_deref(), Some("DB_PW"));
    assert_eq!(
        store.postgres_config(),
        Some(serde_json::json!({"url": "postgres://b@env/db", "passwordEnv": "DB_PW"}))
    );
    let row = settings
        .composition
        .rows
        .iter()
        .find(|r| r.id == PERSISTENCE_ROW)
        .unwrap();
    assert_eq!(row.plugin, "session-persistence-postgres");
}

#[test]
fn bad_store_settings_are_refused_without_echoing_the_url() {
    assert_eq!(
        error_of("[store]\nbackend = \"mysql\"\n"),
        "settings.toml:2: `store.backend`: expected one of \"files\", \"postgres\", found \"mysql\""
    );
    let missing = error_of("[store]\nbackend = \"postgres\"\n");
    assert!(
        missing.contains("store.url") && missing.contains("DSH_DATABASE_URL"),
        "{missing}"
    );
    let unknown = error_of("[store]\npasword_env = \"X\"\n");
    assert!(unknown.contains("password_env"), "{unknown}");
    let empty = error_of("[store]\nurl = \"\"\n");
    assert!(empty.contains("store.url"), "{empty}");
}
