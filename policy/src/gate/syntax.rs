//! The parsed command as a flat, read-only copy of tree-sitter-bash's syntax
//! tree.
//!
//! tree-sitter's own tree is expensive to navigate: every cursor step climbs
//! and descends hidden nodes (a long argument list is a balanced tree of
//! them), and `Node::kind()` measures and checks a C string on each call.
//! The gate reads every node several times (coverage checks, the walk,
//! word decoding), so it copies the tree once, in one cursor pass, into an
//! array in pre-order: visible nodes only, each with its kind resolved to a
//! [`K`], its field, its byte range and links to its parent, first child
//! and next sibling. Everything after that is indexing into the array.

use std::sync::OnceLock;

use tree_sitter::{Language, ParseOptions, ParseState, Parser, Point, Tree};

use super::budget::{Budget, Exceeded, CHUNK};

/// `u32::MAX`: no such node.
const NONE: u32 = u32::MAX;

macro_rules! kinds {
    ($($variant:ident = $name:literal,)*) => {
        /// The node kinds the gate tells apart, by name (as `Node::kind()`
        /// returns them: named and anonymous kinds of one name are one `K`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u8)]
        pub(crate) enum K {
            $($variant,)*
            /// Any other kind.
            Other,
        }

        impl K {
            fn from_name(name: &str) -> K {
                match name {
                    $($name => K::$variant,)*
                    _ => K::Other,
                }
            }
        }
    };
}

kinds! {
    Program = "program",
    List = "list",
    Pipeline = "pipeline",
    Command = "command",
    CommandName = "command_name",
    Word = "word",
    String = "string",
    StringContent = "string_content",
    RawString = "raw_string",
    AnsiCString = "ansi_c_string",
    TranslatedString = "translated_string",
    Concatenation = "concatenation",
    Number = "number",
    VariableAssignment = "variable_assignment",
    VariableAssignments = "variable_assignments",
    VariableName = "variable_name",
    SpecialVariableName = "special_variable_name",
    NegatedCommand = "negated_command",
    CompoundStatement = "compound_statement",
    DoGroup = "do_group",
    IfStatement = "if_statement",
    ElifClause = "elif_clause",
    ElseClause = "else_clause",
    WhileStatement = "while_statement",
    ForStatement = "for_statement",
    CStyleForStatement = "c_style_for_statement",
    CaseStatement = "case_statement",
    CaseItem = "case_item",
    Subshell = "subshell",
    Array = "array",
    BinaryExpression = "binary_expression",
    UnaryExpression = "unary_expression",
    PostfixExpression = "postfix_expression",
    TernaryExpression = "ternary_expression",
    ParenthesizedExpression = "parenthesized_expression",
    Subscript = "subscript",
    BraceExpression = "brace_expression",
    HeredocBody = "heredoc_body",
    HeredocStart = "heredoc_start",
    HeredocContent = "heredoc_content",
    HeredocEnd = "heredoc_end",
    Error = "ERROR",
    FileDescriptor = "file_descriptor",
    ExtglobPattern = "extglob_pattern",
    Regex = "regex",
    TestOperator = "test_operator",
    Comment = "comment",
    RedirectedStatement = "redirected_statement",
    FileRedirect = "file_redirect",
    HeredocRedirect = "heredoc_redirect",
    HerestringRedirect = "herestring_redirect",
    FunctionDefinition = "function_definition",
    DeclarationCommand = "declaration_command",
    UnsetCommand = "unset_command",
    TestCommand = "test_command",
    CommandSubstitution = "command_substitution",
    ProcessSubstitution = "process_substitution",
    ArithmeticExpansion = "arithmetic_expansion",
    Expansion = "expansion",
    SimpleExpansion = "simple_expansion",
    Amp = "&",
    PipeAmp = "|&",
    Backtick = "`",
    DoubleSemi = ";;",
    SemiAmp = ";&",
    DoubleSemiAmp = ";;&",
    DoubleParen = "((",
    Brace = "{",
    Bang = "!",
    DoubleBracket = "[[",
    Bracket = "[",
    DoubleQuote = "\"",
}

/// The fields the gate reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Field {
    None,
    Name,
    Argument,
    Redirect,
    Destination,
    Other,
}

/// The kinds whose children's fields the gate reads; other nodes' children
/// are not asked for theirs (the cursor finds a field by climbing every
/// hidden node above the child: a long list's children each pay for the
/// depth of the list).
const FIELDED: &[K] = &[
    K::Command,
    K::FileRedirect,
    K::FunctionDefinition,
    K::VariableAssignment,
    K::Subscript,
    K::HeredocRedirect,
];

/// What the gate knows of tree-sitter-bash's symbols and fields, read from
/// the language once.
struct Lang {
    kinds: Vec<(K, &'static str)>,
    /// `ERROR` (symbol 65535) and `_ERROR` (65534) lie outside the table.
    error: (K, &'static str),
    error_repeat: (K, &'static str),
    fields: Vec<Field>,
}

fn language() -> Language {
    tree_sitter_bash::LANGUAGE.into()
}

fn lang() -> &'static Lang {
    static LANG: OnceLock<Lang> = OnceLock::new();
    LANG.get_or_init(|| {
        let language = language();
        let kind = |id: u16| {
            let name = language.node_kind_for_id(id).unwrap_or("");
            (K::from_name(name), name)
        };
        let kinds = (0..language.node_kind_count())
            .map(|id| kind(id as u16))
            .collect();
        let mut fields = vec![Field::Other; language.field_count() + 1];
        fields[0] = Field::None;
        for (name, field) in [
            ("name", Field::Name),
            ("argument", Field::Argument),
            ("redirect", Field::Redirect),
            ("destination", Field::Destination),
        ] {
            if let Some(id) = language.field_id_for_name(name) {
                fields[usize::from(id.get())] = field;
            }
        }
        Lang {
            kinds,
            error: kind(u16::MAX),
            error_repeat: kind(u16::MAX - 1),
            fields,
        }
    })
}

impl Lang {
    fn kind(&self, id: u16) -> (K, &'static str) {
        match self.kinds.get(usize::from(id)) {
            Some(k) => *k,
            None if id == u16::MAX => self.error,
            None if id == u16::MAX - 1 => self.error_repeat,
            None => (K::Other, ""),
        }
    }
}

const NAMED: u8 = 1;
const MISSING: u8 = 2;

#[derive(Clone, Copy)]
struct Raw {
    start: u32,
    end: u32,
    parent: u32,
    next: u32,
    children: u32,
    id: u16,
    kind: K,
    field: Field,
    flags: u8,
}

/// A parsed command string.
pub(crate) struct Syntax {
    nodes: Vec<Raw>,
    has_error: bool,
}

thread_local! {
    static PARSER: std::cell::RefCell<Option<Parser>> = const { std::cell::RefCell::new(None) };
}

/// Why a parse gave no tree.
pub(crate) enum Unparsed {
    /// The command is over one of the parse bounds.
    Exceeded(Exceeded),
    /// tree-sitter returned no tree for another reason.
    GaveUp,
}

/// Parse `src` (ASCII: see `walk::ascii_shadow`) with the thread's parser,
/// created once, under `budget` (see [`super::budget`]).
pub(crate) fn parse(src: &str, budget: &Budget) -> Result<Syntax, Unparsed> {
    budget.admit(src).map_err(Unparsed::Exceeded)?;
    let bytes = src.as_bytes();
    // The lexer asks for the text at an offset; it gets at most `CHUNK`
    // bytes, so what it reads (again) can be counted. Past a bound it gets
    // nothing (the end of the input, as far as it can tell): the parse
    // then ends quickly, and its tree is not used.
    let mut read = |at: usize, _: Point| -> &[u8] {
        let rest = bytes.get(at..).unwrap_or_default();
        let chunk = &rest[..rest.len().min(CHUNK)];
        if budget.lex(chunk.len()) {
            chunk
        } else {
            &[]
        }
    };
    let mut progress = |_: &ParseState| budget.progress();
    let tree = PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut parser = Parser::new();
            parser.set_language(&language()).ok()?;
            *slot = Some(parser);
        }
        let parser = slot.as_mut()?;
        let options = ParseOptions::new().progress_callback(&mut progress);
        let tree = parser.parse_with_options(&mut read, None, Some(options));
        if tree.is_none() {
            // A cancelled parse would otherwise be resumed by the next one.
            parser.reset();
        }
        tree
    });
    // A tree parsed after the lexer was cut off describes a truncated
    // input: only the bound counts.
    match (budget.spent(), tree) {
        (Some(e), _) => Err(Unparsed::Exceeded(e)),
        (None, Some(tree)) => Ok(Syntax::copy(&tree)),
        (None, None) => Err(Unparsed::GaveUp),
    }
}

impl Syntax {
    fn copy(tree: &Tree) -> Syntax {
        let root = tree.root_node();
        let copy = Syntax::copy_with(tree, true);
        // A count that fell short would have left nodes out: the total
        // tells, and the copy is then made again without counts.
        if copy.nodes.len() == root.descendant_count() {
            copy
        } else {
            Syntax::copy_with(tree, false)
        }
    }

    /// One cursor walk over `tree`. With `counted`, each node's
    /// `child_count()` spares the cursor the failing step after its last
    /// child (a failed step costs as much as a real one).
    fn copy_with(tree: &Tree, counted: bool) -> Syntax {
        let lang = lang();
        let root = tree.root_node();
        let mut nodes: Vec<Raw> = Vec::with_capacity(root.descendant_count());
        // Open ancestors: their index, the index of their last child so
        // far, and how many of their children are still to come.
        struct Open {
            index: u32,
            last: u32,
            left: usize,
        }
        let mut open: Vec<Open> = Vec::new();
        let mut cursor = root.walk();
        loop {
            let node = cursor.node();
            let i = nodes.len() as u32;
            let parent = match open.last_mut() {
                Some(o) => {
                    nodes[o.index as usize].children += 1;
                    if o.last != NONE {
                        nodes[o.last as usize].next = i;
                    }
                    o.last = i;
                    o.left = o.left.saturating_sub(1);
                    o.index
                }
                None => NONE,
            };
            let id = node.kind_id();
            let fielded = parent != NONE && FIELDED.contains(&nodes[parent as usize].kind);
            let field = match fielded.then(|| cursor.field_id()).flatten() {
                Some(f) => lang
                    .fields
                    .get(usize::from(f.get()))
                    .copied()
                    .unwrap_or(Field::Other),
                None => Field::None,
            };
            let mut flags = 0;
            if node.is_named() {
                flags |= NAMED;
            }
            if node.is_missing() {
                flags |= MISSING;
            }
            nodes.push(Raw {
                start: node.start_byte() as u32,
                end: node.end_byte() as u32,
                parent,
                next: NONE,
                children: 0,
                id,
                kind: lang.kind(id).0,
                field,
                flags,
            });
            let count = if counted {
                node.child_count()
            } else {
                usize::MAX
            };
            if count > 0 && cursor.goto_first_child() {
                open.push(Open {
                    index: i,
                    last: NONE,
                    left: count,
                });
                continue;
            }
            // On to the next node in pre-order: the next sibling of the
            // nearest open ancestor that has children left.
            loop {
                match open.last() {
                    None => {
                        return Syntax {
                            nodes,
                            has_error: root.has_error(),
                        }
                    }
                    Some(o) if o.left > 0 && cursor.goto_next_sibling() => break,
                    Some(_) => {
                        cursor.goto_parent();
                        open.pop();
                    }
                }
            }
        }
    }

    pub fn root(&self) -> Node<'_> {
        Node {
            nodes: &self.nodes,
            i: 0,
        }
    }

    /// The tree holds a syntax error or a missing token.
    pub fn has_error(&self) -> bool {
        self.has_error
    }

    /// Every node in pre-order (the order of a cursor walk).
    pub fn preorder(&self) -> impl Iterator<Item = Node<'_>> {
        (0..self.nodes.len() as u32).map(|i| Node {
            nodes: &self.nodes,
            i,
        })
    }
}

/// One node of a [`Syntax`].
#[derive(Clone, Copy)]
pub(crate) struct Node<'t> {
    nodes: &'t [Raw],
    i: u32,
}

impl<'t> Node<'t> {
    fn raw(&self) -> &'t Raw {
        &self.nodes[self.i as usize]
    }

    fn at(&self, i: u32) -> Option<Node<'t>> {
        (i != NONE).then_some(Node {
            nodes: self.nodes,
            i,
        })
    }

    pub fn kind(&self) -> K {
        self.raw().kind
    }

    /// The kind's name (`Node::kind()`).
    pub fn name(&self) -> &'static str {
        lang().kind(self.raw().id).1
    }

    pub fn is_named(&self) -> bool {
        self.raw().flags & NAMED != 0
    }

    pub fn is_missing(&self) -> bool {
        self.raw().flags & MISSING != 0
    }

    pub fn start_byte(&self) -> usize {
        self.raw().start as usize
    }

    pub fn end_byte(&self) -> usize {
        self.raw().end as usize
    }

    pub fn byte_range(&self) -> std::ops::Range<usize> {
        self.start_byte()..self.end_byte()
    }

    /// The field this node fills in its parent. Recorded for the children
    /// of the kinds in [`FIELDED`] only; other nodes answer `Field::None`.
    pub fn field(&self) -> Field {
        debug_assert!(
            self.parent().is_none_or(|p| FIELDED.contains(&p.kind())),
            "field() asked of a child of `{}`, which is not in FIELDED",
            self.parent().map_or("", |p| p.name())
        );
        self.raw().field
    }

    pub fn child_count(&self) -> usize {
        self.raw().children as usize
    }

    pub fn parent(&self) -> Option<Node<'t>> {
        self.at(self.raw().parent)
    }

    pub fn first_child(&self) -> Option<Node<'t>> {
        // Pre-order: the first child comes right after its parent.
        if self.raw().children == 0 {
            None
        } else {
            self.at(self.i + 1)
        }
    }

    pub fn next_sibling(&self) -> Option<Node<'t>> {
        self.at(self.raw().next)
    }

    pub fn children(&self) -> Children<'t> {
        Children {
            next: self.first_child(),
        }
    }

    pub fn named_children(&self) -> impl Iterator<Item = Node<'t>> {
        self.children().filter(|c| c.is_named())
    }

    /// The first child in `field`.
    pub fn child_by_field(&self, field: Field) -> Option<Node<'t>> {
        self.children().find(|c| c.field() == field)
    }

    /// The node's source text (empty if the range is not on character
    /// boundaries of `src`).
    pub fn text<'s>(&self, src: &'s str) -> &'s str {
        src.get(self.byte_range()).unwrap_or("")
    }
}

pub(crate) struct Children<'t> {
    next: Option<Node<'t>>,
}

impl<'t> Iterator for Children<'t> {
    type Item = Node<'t>;

    fn next(&mut self) -> Option<Node<'t>> {
        let n = self.next?;
        self.next = n.next_sibling();
        Some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The copy answers every question the gate asks exactly as
    /// tree-sitter's own nodes and cursor do.
    fn same(src: &str) {
        let mut parser = Parser::new();
        parser.set_language(&language()).unwrap();
        let tree = parser.parse(src, None).unwrap();
        let copy = Syntax::copy(&tree);
        let counted = Syntax::copy_with(&tree, true);
        assert_eq!(
            counted.nodes.len(),
            tree.root_node().descendant_count(),
            "{src:?}: the counted copy is complete"
        );
        assert_eq!(copy.has_error(), tree.root_node().has_error(), "{src:?}");
        let mut cursor = tree.root_node().walk();
        let mut order = copy.preorder();
        let mut depth = 0usize;
        loop {
            let node = cursor.node();
            let ours = order.next().expect("as many nodes");
            let what = format!("{src:?}: {} at {:?}", node.kind(), node.byte_range());
            assert_eq!(ours.name(), node.kind(), "{what}");
            assert_eq!(ours.kind(), K::from_name(node.kind()), "{what}");
            assert_eq!(ours.is_named(), node.is_named(), "{what}");
            assert_eq!(ours.is_missing(), node.is_missing(), "{what}");
            assert_eq!(ours.byte_range(), node.byte_range(), "{what}");
            assert_eq!(ours.child_count(), node.child_count(), "{what}");
            let field = match cursor.field_name() {
                None => Field::None,
                Some("name") => Field::Name,
                Some("argument") => Field::Argument,
                Some("redirect") => Field::Redirect,
                Some("destination") => Field::Destination,
                Some(_) => Field::Other,
            };
            let fielded = node
                .parent()
                .is_some_and(|p| FIELDED.contains(&K::from_name(p.kind())));
            if fielded {
                assert_eq!(ours.field(), field, "{what}");
            } else {
                assert_eq!(ours.raw().field, Field::None, "{what}");
            }
            assert_eq!(
                ours.parent().map(|p| p.byte_range()),
                node.parent().map(|p| p.byte_range()),
                "{what}"
            );
            let fields_read = FIELDED.contains(&ours.kind());
            for f in ["name", "argument", "destination"]
                .into_iter()
                .filter(|_| fields_read)
            {
                let theirs = node.child_by_field_name(f).map(|c| c.byte_range());
                let field = match f {
                    "name" => Field::Name,
                    "argument" => Field::Argument,
                    _ => Field::Destination,
                };
                assert_eq!(
                    ours.child_by_field(field).map(|c| c.byte_range()),
                    theirs,
                    "{what}: field {f}"
                );
            }
            let mut c2 = node.walk();
            let theirs: Vec<_> = node.children(&mut c2).map(|c| c.byte_range()).collect();
            let mine: Vec<_> = ours.children().map(|c| c.byte_range()).collect();
            assert_eq!(mine, theirs, "{what}: children");
            if cursor.goto_first_child() {
                depth += 1;
                continue;
            }
            loop {
                if cursor.goto_next_sibling() {
                    break;
                }
                if !cursor.goto_parent() {
                    assert!(order.next().is_none(), "{src:?}: extra nodes");
                    assert_eq!(depth, 0);
                    return;
                }
                depth -= 1;
            }
        }
    }

    #[test]
    fn the_copy_matches_tree_sitter() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/gate_corpus.toml"
        ))
        .unwrap();
        let table: toml::Table = text.parse().unwrap();
        let mut n = 0;
        for case in table["case"].as_array().unwrap() {
            if let Some(cmd) = case.get("cmd").and_then(|v| v.as_str()) {
                same(cmd);
                n += 1;
            }
        }
        assert!(n > 300, "corpus read: {n} commands");
        for src in [
            "",
            " ",
            "(((",
            "$(",
            "a 'b\" c",
            "f() { f | f & }; f",
            "x=1 y[$(id)]=2 cmd <<EOF\nbody $(x)\nEOF\n",
            "case $x in a) b ;; c) d ;& esac",
            "cat <<<$x\\; >out 2>&1 | tee -a f",
            "${v#$(cmd)} ${x@P} $((1+2)) [[ -n $x ]] (( i++ ))",
            "for ((i=0;i<3;i++)); do echo \"$i\"; done",
            "declare -a x=(1 2) ; unset y; local z=$'\\x24(id)'",
            "echo ${a:-$(b)} `c` <(d) >(e)",
            "if a; then b; elif c; then d; else e; fi",
            "! { a; } && while b; do c; done || until d; do e; done",
        ] {
            same(src);
        }
    }
}

#[cfg(test)]
mod dump {
    /// Prints the tree of `ZOT_GATE_DUMP` (`\n`, `\t` escapes): a
    /// debugging aid, `cargo test -p zot-policy --lib dump -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn dump() {
        let Ok(src) = std::env::var("ZOT_GATE_DUMP") else {
            return;
        };
        let src = src.replace("\\n", "\n").replace("\\t", "\t");
        let budget = super::Budget::new(crate::gate::budget::Limits::DEFAULT);
        let Ok(tree) = super::parse(&src, &budget) else {
            return;
        };
        for n in tree.preorder() {
            let mut d = 0;
            let mut p = n.parent();
            while let Some(q) = p {
                d += 1;
                p = q.parent();
            }
            println!("{}{} {:?}", "  ".repeat(d), n.name(), n.text(&src));
        }
    }
}
