use super::*;

#[test]
fn syntax_errors_name_file_and_line() {
    assert_eq!(
        error_of("[model]\nprovider = \"x\"\nmodel = \n"),
        "settings.toml:3: invalid TOML: invalid string; expected `\"`, `'`"
    );
}

#[test]
fn unknown_keys_suggest_the_closest_known_key() {
    assert_eq!(
        error_of("[approval]\npolcy = \"ask\"\n"),
        "settings.toml:2: unknown key `approval.polcy`; did you mean `policy`?"
    );
    assert_eq!(
        error_of("\n[sandbx]\nmode = \"read-only\"\n"),
        "settings.toml:2: unknown key `sandbx`; did you mean `sandbox`?"
    );
    assert_eq!(
        error_of("[model]\ntemperature = 1\n"),
        "settings.toml:2: unknown key `model.temperature`; expected one of `provider`, `model`"
    );
    assert_eq!(
        error_of("[tools.bassh]\nenabled = true\n"),
        "settings.toml:1: unknown key `tools.bassh`; did you mean `bash`?"
    );
    assert_eq!(
        error_of("[providers.x]\nbase_url = \"http://h\"\n[[providers.x.models]]\nid = \"m\"\ncontext = 5\n"),
        "settings.toml:5: unknown key `providers.x.models[0].context`; expected one of `id`, `context_window`, `max_output_tokens`, `reasoning_efforts`, `default_effort`, `input`"
    );
}

#[test]
fn wrong_values_say_what_is_expected() {
    assert_eq!(
        error_of("[sandbox]\nmode = \"workspace\"\n"),
        "settings.toml:2: `sandbox.mode`: expected one of \"read-only\", \"workspace-write\", \"danger-full-access\", found \"workspace\""
    );
    assert_eq!(
        error_of("[approval]\npolicy = 3\n"),
        "settings.toml:2: `approval.policy`: expected one of \"untrusted\", \"ask\", \"never\", found an integer (3)"
    );
    assert_eq!(
        error_of("[approval]\npolicy = \"auto\"\n"),
        "settings.toml:2: `approval.policy`: expected one of \"untrusted\", \"ask\", \"never\" (`auto` was removed: allow rules in [[approval.rules]] let calls run unasked, and under `ask` commands already run inside the sandbox without a prompt), found \"auto\""
    );
    assert_eq!(
        error_of("[tools.bash]\nenabled = \"no\"\n"),
        "settings.toml:2: `tools.bash.enabled`: expected true or false, found \"no\""
    );
    assert_eq!(
        error_of("model = \"x\"\n"),
        "settings.toml:1: `model`: expected a table, found \"x\""
    );
    assert_eq!(
        error_of("[providers.x]\nbase_url = \"ftp://h\"\n"),
        "settings.toml:2: `providers.x.base_url`: expected an http:// or https:// URL, found \"ftp://h\""
    );
    assert_eq!(
        error_of("[[providers.deepseek-official.models]]\nid = \"m\"\ncontext_window = 0\n"),
        "settings.toml:3: `providers.deepseek-official.models[0].context_window`: expected a whole number greater than 0, found an integer (0)"
    );
    assert_eq!(
        error_of("[[approval.rules]]\naction = \"allow\"\ntool = \"write\"\npath = \"src/[\"\n"),
        "settings.toml:4: `approval.rules[0].path`: expected a glob pattern, found \"src/[\" (unclosed character class; missing ']')"
    );
    assert_eq!(
        error_of("[[approval.rules]]\naction = \"allow\"\ntool = \"bash\"\ncommand_prefix = \" \"\n"),
        "settings.toml:4: `approval.rules[0].command_prefix`: expected a non-empty string, found \"\""
    );
    assert_eq!(
        error_of("[[approval.rules]]\naction = \"maybe\"\ntool = \"bash\"\n"),
        "settings.toml:2: `approval.rules[0].action`: expected one of \"allow\", \"ask\", \"deny\", found \"maybe\""
    );
}

#[test]
fn a_secret_in_the_wrong_place_is_not_echoed() {
    let message = error_of("[providers.deepseek-official]\napi_key_env = \"sk-live-abc123\"\n");
    assert_eq!(
        message,
        "settings.toml:2: `providers.deepseek-official.api_key_env`: expected the name of an environment variable (letters, digits and `_`), found another string (not shown, in case it is a secret)"
    );
    let message = error_of("[providers.deepseek-official.headers]\nAuthorization = 12345\n");
    assert_eq!(
        message,
        "settings.toml:2: `providers.deepseek-official.headers.Authorization`: expected a string, found an integer"
    );
}

#[test]
fn inconsistent_settings_are_refused() {
    assert_eq!(
        error_of("[providers.local]\napi_key_env = \"K\"\n"),
        "settings.toml:1: `providers.local.base_url`: the new provider route `local` needs a base_url (built-in routes: `deepseek-official`, `openai-compatible`)"
    );
    assert_eq!(
        error_of("[model]\nprovider = \"deepseek-oficial\"\n"),
        "settings.toml:2: `model.provider`: unknown provider route \"deepseek-oficial\"; did you mean `deepseek-official`?"
    );
    assert_eq!(
        error_of("[[plugins]]\nid = \"sesions\"\ndisabled = true\n"),
        "settings.toml:2: `plugins[0].id`: no row is named `sesions`; did you mean `sessions`? to add a new row, also set `plugin`"
    );
    assert_eq!(
        error_of("[[plugins]]\nid = \"tools\"\nplugin = \"other\"\n"),
        "settings.toml:3: `plugins[0].plugin`: row `tools` mounts plugin `tools`; use a new id to add another plugin"
    );
    assert_eq!(
        error_of("[[approval.rules]]\ntool = \"bash\"\n"),
        "settings.toml:1: `approval.rules[0].action`: every approval rule needs `action`"
    );
    assert_eq!(
        error_of("[[approval.rules]]\naction = \"deny\"\ntool = \"write\"\ncommand_prefix = \"rm\"\npath = \"a\"\n"),
        "settings.toml:5: `approval.rules[0].path`: a rule matches either `command_prefix` or `path`, not both"
    );
}

#[test]
fn env_and_flag_errors_name_their_origin() {
    assert_eq!(
        error_with("", &[("DSH_PERMISSION_MODE", "yolo")], &Overrides::default()),
        "env DSH_PERMISSION_MODE: `sandbox.mode`: expected one of \"read-only\", \"workspace-write\", \"danger-full-access\", found \"yolo\""
    );
    assert_eq!(
        error_with("", &[("DSH_PROVIDER", "nope")], &Overrides::default()),
        "env DSH_PROVIDER: `model.provider`: unknown provider route \"nope\"; known routes: `deepseek-official`, `openai-compatible`"
    );
    let flags = Overrides {
        provider: Some("openai-compatibel".into()),
        ..Overrides::default()
    };
    assert_eq!(
        error_with("", &[], &flags),
        "flag --provider: `model.provider`: unknown provider route \"openai-compatibel\"; did you mean `openai-compatible`?"
    );
    assert_eq!(
        error_with("", &[("DEEPSEEK_BASE_URL", "localhost:8080")], &Overrides::default()),
        "env DEEPSEEK_BASE_URL: `providers.deepseek-official.base_url`: expected an http:// or https:// URL, found \"localhost:8080\""
    );
}

#[test]
fn error_codes_are_stable() {
    let home = home_with(Some("[x]\n"));
    let error = load(&env_of(home.path(), &[]), &Overrides::default()).unwrap_err();
    assert_eq!(error.code(), "UNKNOWN_KEY");
    let home = home_with(Some("= 1"));
    let error = load(&env_of(home.path(), &[]), &Overrides::default()).unwrap_err();
    assert_eq!(error.code(), "SETTINGS_SYNTAX");
}

#[test]
fn an_unreadable_settings_file_is_an_error_not_defaults() {
    let home = home_with(None);
    std::fs::create_dir(home.path().join(SETTINGS_FILE)).unwrap();
    let error = load(&env_of(home.path(), &[]), &Overrides::default()).unwrap_err();
    assert_eq!(error.code(), "SETTINGS_UNREADABLE");
    assert_eq!(
        error.to_string(),
        format!(
            "{}: cannot read the settings file: it is a directory, not a regular file",
            home.path().join(SETTINGS_FILE).display()
        )
    );
}

#[test]
fn a_settings_file_that_is_a_device_a_fifo_or_huge_is_never_read() {
    let path_of = |home: &tempfile::TempDir| home.path().join(SETTINGS_FILE);
    let message = |home: &tempfile::TempDir| {
        let error = load(&env_of(home.path(), &[]), &Overrides::default()).unwrap_err();
        assert_eq!(error.code(), "SETTINGS_UNREADABLE");
        error.to_string()
    };
    // /dev/zero used to be read until memory ran out.
    let zero = home_with(None);
    std::os::unix::fs::symlink("/dev/zero", path_of(&zero)).unwrap();
    assert_eq!(
        message(&zero),
        format!(
            "{}: cannot read the settings file: it is a character device, not a regular file",
            path_of(&zero).display()
        )
    );
    // A FIFO used to block the open forever.
    let fifo = home_with(None);
    let name = std::ffi::CString::new(path_of(&fifo).as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `name` is a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    assert!(message(&fifo).ends_with("it is a FIFO, not a regular file"));
    let huge = home_with(None);
    let file = std::fs::File::create(path_of(&huge)).unwrap();
    file.set_len(crate::config::SETTINGS_MAX_BYTES + 1).unwrap();
    assert!(message(&huge).ends_with(&format!(
        "it is larger than the limit of {} bytes for this file",
        crate::config::SETTINGS_MAX_BYTES
    )));
}

#[test]
fn urls_that_cannot_be_endpoints_are_refused_where_they_were_set() {
    let expected = |at: &str, route: &str, found: &str| {
        format!("{at}: `providers.{route}.base_url`: expected an http:// or https:// URL, found {found}")
    };
    assert_eq!(
        error_of("[providers.x]\nbase_url = \"http://[::1\"\n"),
        expected(
            "settings.toml:2",
            "x",
            "\"http://[::1\" (invalid IPv6 address)"
        )
    );
    assert_eq!(
        error_with(
            "",
            &[("DEEPSEEK_BASE_URL", "http://[::1")],
            &Overrides::default()
        ),
        expected(
            "env DEEPSEEK_BASE_URL",
            "deepseek-official",
            "\"http://[::1\" (invalid IPv6 address)"
        )
    );
    let flags = |url: &str| Overrides {
        base_url: Some(url.into()),
        ..Overrides::default()
    };
    assert_eq!(
        error_with("", &[], &flags("http://[::1")),
        expected(
            "flag --base-url",
            "deepseek-official",
            "\"http://[::1\" (invalid IPv6 address)"
        )
    );
    assert_eq!(
        error_with("", &[], &flags("http://127.0.0.1:99999/v1")),
        expected(
            "flag --base-url",
            "deepseek-official",
            "\"http://127.0.0.1:99999/v1\" (invalid port number)"
        )
    );
    assert_eq!(
        error_with(
            "",
            &[("OPENAI_BASE_URL", "http://h/v1?api-version=1")],
            &Overrides::default()
        ),
        expected(
            "env OPENAI_BASE_URL",
            "openai-compatible",
            "\"http://h/v1?api-version=1\" (it has a query or fragment, which `/chat/completions` cannot follow)"
        )
    );
}

#[test]
fn stream_limits_are_positive_byte_counts() {
    assert_eq!(
        error_of("[providers.deepseek-official]\nmax_response_bytes = 0\n"),
        "settings.toml:2: `providers.deepseek-official.max_response_bytes`: expected a whole number greater than 0, found an integer (0)"
    );
    assert_eq!(
        error_of("[providers.deepseek-official]\nmax_sse_line_bytes = \"16M\"\n"),
        "settings.toml:2: `providers.deepseek-official.max_sse_line_bytes`: expected a whole number greater than 0, found \"16M\""
    );
}
