//! The interactive mode's slash commands: what a line means. A line whose
//! first word is `/` and letters (`/help`, `/model gpt-5.5`) is a command
//! and is never sent to the model; `//text` sends `/text`; a line like
//! `/etc/hosts is odd` (a path: another `/` in the first word) is a prompt.

/// One slash command, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Help,
    Exit,
    /// `/model` shows the model; `/model ID` switches.
    Model(Option<String>),
    /// `/sessions` lists the agent's sessions to pick one; `/sessions ID`
    /// resumes that one.
    Sessions(Option<String>),
    SessionFork,
    SessionTree,
    /// `/cd DIR`.
    Cd(String),
    Clear,
    Usage,
    /// `/compact [INSTRUCTIONS]`.
    Compact(Option<String>),
}

/// What a line typed at the prompt is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// Text for the model.
    Prompt(String),
    Command(Command),
    /// A command that is not one, or is used wrongly: the message says what
    /// to type instead.
    Invalid(String),
    /// Nothing (blank).
    Empty,
}

/// The commands, with their arguments and what they do (the `/help` text
/// and the line editor's completions).
pub const COMMANDS: &[(&str, &str, &str)] = &[
    ("/help", "", "show this help"),
    ("/exit", "", "quit (also /quit, Ctrl-D)"),
    (
        "/model",
        "[ID]",
        "show the model, or switch to another that meets the agent's requirements",
    ),
    (
        "/sessions",
        "[ID]",
        "list this agent's sessions and pick one to resume",
    ),
    (
        "/session",
        "fork|tree",
        "fork: continue in a copy of this session; tree: sessions and their forks",
    ),
    (
        "/cd",
        "DIR",
        "change the workspace (changed permissions need consent again)",
    ),
    (
        "/clear",
        "",
        "start a new, empty session (the old one stays resumable)",
    ),
    (
        "/usage",
        "",
        "tokens used so far, and how full the context window is",
    ),
    (
        "/compact",
        "[INSTRUCTIONS]",
        "summarize the earlier conversation to free the context window",
    ),
];

/// The `/help` text.
pub fn help() -> String {
    let mut s = String::from("Commands (never sent to the model):\n");
    for (name, args, what) in COMMANDS {
        let left = if args.is_empty() {
            name.to_string()
        } else {
            format!("{name} {args}")
        };
        s.push_str(&format!("  {left:<22} {what}\n"));
    }
    s.push_str(
        "\nKeys: Enter sends; Alt-Enter or a trailing \\ starts a new line; Up/Down recall \
         history; Ctrl-C clears the line, or cancels a running turn; Ctrl-D quits.\n\
         Start a line with // to send a text beginning with /.",
    );
    s
}

fn names() -> Vec<&'static str> {
    let mut v: Vec<&str> = COMMANDS.iter().map(|c| c.0).collect();
    v.push("/quit");
    v
}

/// Classify a line typed at the prompt.
pub fn parse(line: &str) -> Input {
    let t = line.trim();
    if t.is_empty() {
        return Input::Empty;
    }
    if let Some(rest) = t.strip_prefix("//") {
        return Input::Prompt(format!("/{rest}"));
    }
    let Some(body) = t.strip_prefix('/') else {
        return Input::Prompt(line.to_string());
    };
    let (word, arg) = match body.find(char::is_whitespace) {
        Some(i) => (&body[..i], body[i..].trim()),
        None => (body, ""),
    };
    if word.is_empty() || !word.bytes().all(|b| b.is_ascii_alphabetic()) {
        // `/etc/hosts ...`, `/ 5`: text, not a command.
        return Input::Prompt(line.to_string());
    }
    let arg_opt = (!arg.is_empty()).then(|| arg.to_string());
    let no_arg = |c: Command| {
        if arg.is_empty() {
            Input::Command(c)
        } else {
            Input::Invalid(format!("/{word} takes no argument"))
        }
    };
    match word {
        "help" => no_arg(Command::Help),
        "exit" | "quit" => no_arg(Command::Exit),
        "model" => Input::Command(Command::Model(arg_opt)),
        "sessions" => Input::Command(Command::Sessions(arg_opt)),
        "session" => match arg {
            "fork" => Input::Command(Command::SessionFork),
            "tree" => Input::Command(Command::SessionTree),
            "" => Input::Invalid("/session needs fork or tree (/sessions lists sessions)".into()),
            other => Input::Invalid(format!(
                "/session {other}: unknown; use /session fork or /session tree"
            )),
        },
        "cd" => match arg_opt {
            Some(dir) => Input::Command(Command::Cd(dir)),
            None => Input::Invalid("/cd needs a directory".into()),
        },
        "clear" => no_arg(Command::Clear),
        "usage" => no_arg(Command::Usage),
        "compact" => Input::Command(Command::Compact(arg_opt)),
        _ => {
            let slash = format!("/{word}");
            let hint = zot_policy::suggest(&slash, &names())
                .map(|n| format!("; did you mean {n}?"))
                .unwrap_or_default();
            Input::Invalid(format!(
                "unknown command /{word}{hint} (/help lists them; start with // to send it as text)"
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        assert_eq!(parse("  "), Input::Empty);
        assert_eq!(parse("hello"), Input::Prompt("hello".into()));
        assert_eq!(parse(" /help "), Input::Command(Command::Help));
        assert_eq!(parse("/quit"), Input::Command(Command::Exit));
        assert_eq!(parse("/model"), Input::Command(Command::Model(None)));
        assert_eq!(
            parse("/model  gpt-5.5 "),
            Input::Command(Command::Model(Some("gpt-5.5".into())))
        );
        assert_eq!(parse("/session fork"), Input::Command(Command::SessionFork));
        assert_eq!(parse("/session tree"), Input::Command(Command::SessionTree));
        assert!(matches!(parse("/session"), Input::Invalid(_)));
        assert_eq!(
            parse("/cd ../x y"),
            Input::Command(Command::Cd("../x y".into()))
        );
        assert!(matches!(parse("/cd"), Input::Invalid(_)));
        assert_eq!(parse("/compact"), Input::Command(Command::Compact(None)));
        assert_eq!(
            parse("/compact keep the API names"),
            Input::Command(Command::Compact(Some("keep the API names".into())))
        );
        assert!(matches!(parse("/help me"), Input::Invalid(_)));
        assert_eq!(parse("//help"), Input::Prompt("/help".into()));
        assert_eq!(
            parse("/etc/hosts looks odd"),
            Input::Prompt("/etc/hosts looks odd".into())
        );
        let Input::Invalid(m) = parse("/hlep") else {
            panic!()
        };
        assert!(
            m.contains("unknown command /hlep") && m.contains("did you mean /help?"),
            "{m}"
        );
        let Input::Invalid(m) = parse("/frobnicate") else {
            panic!()
        };
        assert!(m.contains("/help lists them"), "{m}");
        // Every listed command parses as a command.
        for (name, args, _) in COMMANDS {
            let line = match *args {
                "" => name.to_string(),
                "fork|tree" => format!("{name} fork"),
                _ => format!("{name} x"),
            };
            assert!(matches!(parse(&line), Input::Command(_)), "{line}");
        }
    }
}
