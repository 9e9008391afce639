//! The option tables: every program the gate has rules for, and every
//! wrapper, in the format of [`super::opts`]. Each table lists the options
//! that program's parser accepts and the gate has reviewed; an option not
//! listed is denied in allowlist mode. `!x` marks options that run code,
//! `!w` options that write files the command would not obviously write.

use std::sync::LazyLock;

use super::opts::{Abbrev, Grammar};

macro_rules! grammar {
    ($name:ident, $prog:expr, $abbrev:ident, $permute:expr, $spec:expr) => {
        pub(crate) static $name: LazyLock<Grammar> =
            LazyLock::new(|| Grammar::new($prog, Abbrev::$abbrev, $permute, $spec));
    };
    ($name:ident, $prog:expr, $abbrev:ident, $permute:expr, $spec:expr, numeric) => {
        pub(crate) static $name: LazyLock<Grammar> =
            LazyLock::new(|| Grammar::new($prog, Abbrev::$abbrev, $permute, $spec).numeric());
    };
}

// ---------------------------------------------------------------- git

/// git's own options (git.c: exact names, `--opt=value` or a separate
/// value, parsing stops at the subcommand).
pub(crate) const GIT_GLOBAL: &str = "C= c=!x config-env=!x exec-path?!x git-dir=!x work-tree=!w \
    namespace= p|paginate!x P|no-pager no-replace-objects no-lazy-fetch no-optional-locks \
    no-advice bare literal-pathspecs glob-pathspecs noglob-pathspecs icase-pathspecs \
    html-path man-path info-path version help list-cmds= attr-source=!x";
grammar!(GIT, "git", Exact, false, GIT_GLOBAL);

const DIFF: &str = "p|u|patch s|no-patch U|unified= W|function-context raw patch-with-raw \
    patch-with-stat stat? numstat shortstat dirstat? cumulative dirstat-by-file? summary \
    name-only name-status z submodule? color? color-moved? color-moved-ws= word-diff? \
    word-diff-regex= color-words? no-renames rename-empty M|find-renames? C|find-copies? \
    find-copies-harder D|irreversible-delete l= S= G= find-object= pickaxe-all pickaxe-regex \
    O= R a|text b|ignore-space-change w|ignore-all-space ignore-space-at-eol ignore-cr-at-eol \
    ignore-blank-lines I|ignore-matching-lines= ext-diff!x textconv!x ignore-submodules? \
    src-prefix= dst-prefix= default-prefix no-prefix line-prefix= inter-hunk-context= \
    exit-code quiet abbrev? full-index binary B|break-rewrites? relative? minimal patience \
    histogram diff-algorithm= anchored= indent-heuristic output=!w output-indicator-new= \
    output-indicator-old= output-indicator-context= stat-width= stat-name-width= \
    stat-graph-width= stat-count= compact-summary diff-filter= ita-invisible-in-index \
    ita-visible-in-index check ws-error-highlight= dd m c cc remerge-diff? diff-merges= \
    combined-all-paths t";
const LOG: &str = "n|max-count= skip= since= after= until= before= since-as-filter= author= \
    committer= grep-reflog= grep= all-match invert-grep i|regexp-ignore-case basic-regexp \
    E|extended-regexp F|fixed-strings P|perl-regexp remove-empty merges no-merges \
    min-parents= max-parents= first-parent exclude-first-parent-only not all branches? tags? \
    remotes? glob= exclude= exclude-hidden= reflog alternate-refs single-worktree ignore-missing \
    bisect stdin cherry-mark cherry-pick left-only right-only cherry g|walk-reflogs merge \
    boundary simplify-by-decoration show-pulls full-history dense sparse simplify-merges \
    ancestry-path? L= follow decorate? decorate-refs= decorate-refs-exclude= clear-decorations \
    source mailmap use-mailmap full-diff log-size oneline pretty? format= abbrev-commit \
    no-abbrev-commit expand-tabs? notes? show-notes? show-notes-by-default standard-notes \
    show-signature!x relative-date date= parents children left-right graph show-linear-break? \
    topo-order date-order author-date-order reverse encoding= count no-walk? do-walk \
    in-commit-order";
const STATUS: &str = "s|short b|branch show-stash porcelain? long v|verbose \
    u|untracked-files? ignore-submodules? ignored? z column? ahead-behind renames \
    find-renames? no-renames";
const BRANCH: &str = "d|delete D f|force m|move M c|copy C l|list a|all r|remotes v|verbose \
    q|quiet t|track? u|set-upstream-to= unset-upstream contains= no-contains= merged? \
    no-merged? sort= points-at= format= color? column? show-current i|ignore-case abbrev= \
    create-reflog omit-empty recurse-submodules edit-description!x";
const COMMIT: &str = "a|all interactive patch C|reuse-message= c|reedit-message=!x fixup= \
    squash= reset-author short branch porcelain long z F|file= author= date= m|message= \
    t|template=!x s|signoff trailer= n|no-verify verify allow-empty allow-empty-message \
    cleanup= e|edit!x no-edit amend no-post-rewrite i|include o|only pathspec-from-file= \
    pathspec-file-nul u|untracked-files? v|verbose q|quiet dry-run status no-status \
    S|gpg-sign?!x no-gpg-sign";
const ADD: &str = "n|dry-run v|verbose f|force i|interactive p|patch e|edit!x u|update \
    A|all no-all no-ignore-removal ignore-removal N|intent-to-add refresh ignore-errors \
    ignore-missing sparse renormalize chmod= pathspec-from-file= pathspec-file-nul";
const CHECKOUT: &str = "q|quiet progress f|force ours theirs b= B= t|track? guess l detach \
    orphan= ignore-skip-worktree-bits m|merge conflict= p|patch ignore-other-worktrees \
    overwrite-ignore recurse-submodules? overlay pathspec-from-file= pathspec-file-nul";
const SWITCH: &str = "c|create= C|force-create= d|detach guess f|force|discard-changes \
    m|merge conflict= q|quiet progress t|track? orphan= ignore-other-worktrees \
    recurse-submodules?";
const RESTORE: &str = "s|source= p|patch W|worktree S|staged q|quiet progress ours theirs \
    m|merge conflict= ignore-unmerged ignore-skip-worktree-bits recurse-submodules? overlay \
    pathspec-from-file= pathspec-file-nul";
const RESET: &str = "q|quiet no-refresh refresh soft mixed N hard merge keep \
    recurse-submodules? p|patch pathspec-from-file= pathspec-file-nul";
const STASH: &str = "p|patch S|staged k|keep-index u|include-untracked a|all q|quiet \
    m|message= pathspec-from-file= pathspec-file-nul index";
const FETCH: &str = "all a|append atomic depth= deepen= shallow-since= shallow-exclude= \
    unshallow update-shallow negotiation-tip= negotiate-only dry-run porcelain write-fetch-head \
    f|force k|keep multiple auto-maintenance auto-gc write-commit-graph prefetch p|prune \
    P|prune-tags n t|tags refetch refmap= recurse-submodules? j|jobs= set-upstream \
    u|update-head-ok upload-pack=!x q|quiet v|verbose progress o|server-option= \
    show-forced-updates 4|ipv4 6|ipv6 filter= r|rebase? ff ff-only commit edit!x cleanup= \
    log? signoff? stat squash autostash verify-signatures!x s|strategy= X|strategy-option= \
    S|gpg-sign?!x allow-unrelated-histories";
const PUSH: &str = "all branches mirror tags follow-tags atomic n|dry-run porcelain d|delete \
    prune f|force force-with-lease? force-if-includes recurse-submodules= verify \
    u|set-upstream thin q|quiet v|verbose progress o|push-option= 4|ipv4 6|ipv6 \
    receive-pack|exec=!x repo= signed?!x no-signed";
const MERGE: &str = "commit no-commit e|edit!x cleanup= ff ff-only log? compact-summary n stat \
    summary squash verify verify-signatures!x s|strategy= X|strategy-option= \
    S|gpg-sign?!x m= F|file= into-name= rerere-autoupdate q|quiet v|verbose progress \
    autostash allow-unrelated-histories abort quit continue signoff";
const REBASE: &str = "onto= keep-base continue abort quit skip edit-todo!x show-current-patch \
    m|merge apply s|strategy= X|strategy-option= S|gpg-sign?!x q|quiet v|verbose stat n \
    verify f|force-rebase fork-point ignore-whitespace whitespace= committer-date-is-author-date \
    ignore-date reset-author-date signoff i|interactive!x r|rebase-merges? x|exec=!x \
    root autosquash autostash reschedule-failed-exec update-refs empty= keep-empty \
    trailer= C= no-ff";
const TAG: &str = "a|annotate s|sign!x u|local-user=!x f|force d|delete v|verify!x n? \
    l|list sort= color? i|ignore-case omit-empty column? contains= no-contains= merged? \
    no-merged? points-at= m|message= F|file= e|edit!x cleanup= create-reflog format=";
const REMOTE: &str = "v|verbose";
const REV_PARSE: &str = "parseopt sq-quote keep-dashdash stop-at-non-option stuck-long \
    revs-only no-revs flags no-flags default= prefix= verify q|quiet sq short? not \
    abbrev-ref? symbolic symbolic-full-name output-object-format= all branches? tags? \
    remotes? glob= exclude= exclude-hidden= disambiguate= local-env-vars path-format= \
    git-dir git-common-dir resolve-git-dir= git-path= show-toplevel show-superproject-working-tree \
    shared-index-path absolute-git-dir is-inside-git-dir is-inside-work-tree is-bare-repository \
    is-shallow-repository show-cdup show-prefix show-object-format? show-ref-format since= \
    after= until= before= end-of-options";
const LS_FILES: &str = "c|cached d|deleted o|others i|ignored s|stage u|unmerged k|killed \
    m|modified r resolve-undo directory no-empty-directory eol deduplicate z t v f \
    x|exclude= X|exclude-from= exclude-per-directory= exclude-standard error-unmatch \
    with-tree= full-name recurse-submodules abbrev? debug format= sparse";
const BLAME: &str = "b root show-stats score-debug f|show-name n|show-number p|porcelain \
    line-porcelain c l t S= reverse= first-parent since= contents= L= M? C? ignore-rev= \
    ignore-revs-file= color-lines color-by-age progress s e|show-email w minimal \
    abbrev? incremental encoding= date=";
const GREP: &str = "cached no-index untracked exclude-standard recurse-submodules a|text \
    textconv!x i|ignore-case I max-depth= r|recursive w|word-regexp v|invert-match h H \
    full-name E|extended-regexp G|basic-regexp P|perl-regexp F|fixed-strings n|line-number \
    column l|files-with-matches name-only L|files-without-match O|open-files-in-pager?!x \
    z|null o|only-matching c|count color? break heading p|show-function A|after-context= \
    B|before-context= C|context= W|function-context m|max-count= threads= f= e= and or not \
    all-match q|quiet";
const SHORTLOG: &str = "n|numbered s|summary e|email format= group= c|committer \
    w? date= since= until= after= before= all branches? tags?";
const DESCRIBE: &str = "dirty? broken? all tags contains abbrev= candidates= exact-match debug \
    long match= exclude= always first-parent";
const CHERRY_PICK: &str = "e|edit!x cleanup= x r m|mainline= n|no-commit s|signoff \
    S|gpg-sign?!x ff allow-empty allow-empty-message empty= keep-redundant-commits \
    strategy= X|strategy-option= rerere-autoupdate continue skip quit abort";
const INIT: &str = "q|quiet bare template=!x separate-git-dir=!w object-format= ref-format= \
    b|initial-branch= shared?";
const CLONE: &str = "l|local no-hardlinks s|shared reference=!x reference-if-able=!x dissociate \
    q|quiet v|verbose progress server-option= n|no-checkout reject-shallow bare sparse \
    filter= also-filter-submodules mirror o|origin= b|branch= revision= \
    u|upload-pack=!x template=!x c|config=!x depth= shallow-since= shallow-exclude= \
    single-branch tags recurse-submodules? shallow-submodules remote-submodules \
    separate-git-dir=!w ref-format= j|jobs= bundle-uri=";
const MV: &str = "v|verbose f|force k n|dry-run sparse";
const RM: &str = "f|force n|dry-run r cached ignore-unmatch sparse q|quiet \
    pathspec-from-file= pathspec-file-nul";
const CONFIG: &str = "get get-all get-regexp get-urlmatch l|list show-origin show-scope \
    null|z name-only global system local worktree f|file= blob= includes \
    t|type= bool int bool-or-int path expiry-date default= e|edit!x";
const SHOW_REF: &str = "head branches tags heads verify exists dereference|d s|hash? \
    abbrev? q|quiet exclude-existing?";
const CAT_FILE: &str = "t s e p textconv!x filters!x path= batch? batch-check? \
    batch-command? batch-all-objects buffer unordered allow-unknown-type follow-symlinks Z z";
const FOR_EACH_REF: &str = "count= sort= format= color? shell perl python tcl points-at= \
    merged? no-merged? contains= no-contains= ignore-case omit-empty exclude= \
    include-root-refs start-after= stdin";
const CLEAN: &str = "d f|force i|interactive n|dry-run q|quiet e|exclude= x X";
const REV_LIST: &str = "objects objects-edge objects-edge-aggressive unpacked \
    object-names timestamp quiet disk-usage? header max-age= min-age=";
const LS_TREE: &str = "d r t l|long z name-only|name-status object-only full-name \
    full-tree abbrev? format=";
const BISECT: &str = "term-old= term-new= term-good= term-bad= no-checkout first-parent";
const WORKTREE: &str = "f|force detach checkout lock orphan reason= q|quiet track guess-remote \
    b= B= porcelain z v|verbose expire=";
const APPLY: &str = "stat numstat summary check index 3|3way ours theirs union \
    build-fake-ancestor= R|reverse reject z p= C= unidiff-zero apply no-add allow-binary-replacement \
    binary exclude= include= ignore-space-change ignore-whitespace whitespace= \
    inaccurate-eof v|verbose q|quiet recount directory= unsafe-paths allow-empty cached \
    intent-to-add";
const FORMAT_PATCH: &str = "o|output-directory=!w stdout n|numbered N|no-numbered \
    start-number= numbered-files k|keep-subject signoff attach? inline? thread? \
    in-reply-to= ignore-if-in-upstream always cover-from-description= subject-prefix= \
    filename-max-length= rfc? v|reroll-count= to= cc= from? force-in-body-from \
    add-header= cover-letter encode-email-headers base= root progress zero-commit \
    no-binary suffix= interdiff= range-diff= creation-factor=";
const MERGE_BASE: &str = "a|all octopus independent is-ancestor fork-point";
const NAME_REV: &str = "tags refs= exclude= all annotate-stdin name-only undefined always";
const COUNT_OBJECTS: &str = "v|verbose H|human-readable";
const GC: &str = "aggressive auto quiet prune? force keep-largest-pack cruft max-cruft-size=";
const FSCK: &str = "tags root unreachable cache no-reflogs full connectivity-only strict \
    verbose lost-found dangling progress name-objects references";
const ARCHIVE: &str = "format= l|list v|verbose prefix= add-file= add-virtual-file= \
    o|output=!w worktree-attributes mtime= remote=!x exec=!x 0 1 2 3 4 5 6 7 8 9";
const SUBMODULE: &str = "q|quiet cached recursive init remote checkout merge rebase \
    N|no-fetch depth= recommend-shallow j|jobs= single-branch filter= b|branch= f|force \
    name= reference= dissociate all";
const SPARSE_CHECKOUT: &str = "cone no-cone sparse-index stdin skip-checks";
const NOTES: &str = "ref=";
const VERSION: &str = "build-options";
const RANGE_DIFF: &str = "creation-factor= left-only right-only";
const CHERRY: &str = "v abbrev?";
const SHOW_BRANCH: &str = "r|remotes a|all current topo-order date-order sparse more? \
    list merge-base independent no-name sha1-name topics g|reflog? color?";
const VAR: &str = "l";

/// The git subcommands allowlist mode allows, each with its options.
pub(crate) fn git_sub(sub: &str) -> Option<&'static Grammar> {
    macro_rules! subs {
        ($($name:literal => $spec:expr $(, $num:ident)?;)*) => {{
            static TABLE: LazyLock<Vec<(&'static str, Grammar)>> = LazyLock::new(|| {
                vec![$(($name, {
                    let g = Grammar::new(concat!("git ", $name), Abbrev::Git, true, $spec);
                    if false $(|| stringify!($num) == "numeric")? { g.numeric() } else { g }
                })),*]
            });
            TABLE.iter().find(|(n, _)| *n == sub).map(|(_, g)| g)
        }};
    }
    // One spec string per subcommand (concatenated groups).
    subs! {
        "status" => STATUS;
        "log" => const_format(LOG, DIFF), numeric;
        "show" => const_format(LOG, DIFF), numeric;
        "whatchanged" => const_format(LOG, DIFF), numeric;
        "diff" => const_format(DIFF, "no-index"), numeric;
        "diff-tree" => const_format(DIFF, "r root stdin no-commit-id"), numeric;
        "diff-index" => DIFF;
        "diff-files" => DIFF;
        "branch" => BRANCH;
        "add" => ADD;
        "commit" => COMMIT;
        "checkout" => CHECKOUT;
        "switch" => SWITCH;
        "restore" => RESTORE;
        "reset" => RESET;
        "stash" => STASH;
        "fetch" => FETCH;
        "pull" => FETCH;
        "push" => PUSH;
        "merge" => MERGE;
        "rebase" => REBASE;
        "tag" => TAG;
        "remote" => REMOTE;
        "rev-parse" => REV_PARSE;
        "ls-files" => LS_FILES;
        "blame" => BLAME;
        "annotate" => BLAME;
        "grep" => GREP;
        "shortlog" => SHORTLOG, numeric;
        "describe" => DESCRIBE;
        "cherry-pick" => CHERRY_PICK;
        "revert" => CHERRY_PICK;
        "init" => INIT;
        "clone" => CLONE;
        "mv" => MV;
        "rm" => RM;
        "config" => CONFIG;
        "show-ref" => SHOW_REF;
        "cat-file" => CAT_FILE;
        "for-each-ref" => FOR_EACH_REF;
        "reflog" => LOG, numeric;
        "clean" => CLEAN;
        "rev-list" => const_format(REV_LIST, LOG), numeric;
        "ls-tree" => LS_TREE;
        "bisect" => BISECT;
        "worktree" => WORKTREE;
        "apply" => APPLY;
        "format-patch" => const_format(FORMAT_PATCH, DIFF), numeric;
        "merge-base" => MERGE_BASE;
        "name-rev" => NAME_REV;
        "count-objects" => COUNT_OBJECTS;
        "gc" => GC;
        "fsck" => FSCK;
        "archive" => ARCHIVE;
        "submodule" => SUBMODULE;
        "sparse-checkout" => SPARSE_CHECKOUT;
        "notes" => NOTES;
        "version" => VERSION;
        "range-diff" => const_format(RANGE_DIFF, DIFF);
        "cherry" => CHERRY;
        "show-branch" => SHOW_BRANCH;
        "var" => VAR;
        "ls-remote" => "q|quiet upload-pack=!x exit-code get-url h|heads t|tags b|branches refs \
            symref sort= o|server-option=";
        "help" => "a|all g|guides i|info!x m|man!x w|web!x";
    }
}

/// Joins two spec groups (leaked once per table: tables are static).
fn const_format(a: &'static str, b: &'static str) -> &'static str {
    Box::leak(format!("{a} {b}").into_boxed_str())
}

/// Subcommands of the reviewed ones that run programs or hand over to
/// code the gate cannot see.
pub(crate) fn git_sub_action_exec(sub: &str, action: &str) -> bool {
    matches!(
        (sub, action),
        ("bisect", "run")
            | ("submodule", "foreach")
            | ("notes", "edit" | "add" | "append")
            | ("stash", "edit")
            | ("worktree", "add")
    )
}

// ---------------------------------------------------------------- tools

grammar!(
    TAR,
    "tar",
    Getopt,
    true,
    "A|catenate|concatenate c|create d|diff|compare delete \
    r|append t|list test-label u|update x|extract|get C|directory=!w f|file= force-local \
    j|bzip2 J|xz z|gzip|gunzip|ungzip Z|compress|uncompress a|auto-compress lzip lzma lzop \
    zstd I|use-compress-program=!x v|verbose k|keep-old-files keep-newer-files \
    keep-directory-symlink skip-old-files overwrite overwrite-dir U|unlink-first \
    recursive-unlink no-overwrite-dir remove-files m|touch p|preserve-permissions|same-permissions \
    s|preserve-order|same-order preserve no-same-owner same-owner no-same-permissions \
    numeric-owner owner= group= mode= mtime= atime-preserve? h|dereference hard-dereference \
    l|check-links P|absolute-names!w exclude= exclude-from= X= T|files-from= null no-null \
    wildcards no-wildcards wildcards-match-slash no-wildcards-match-slash anchored no-anchored \
    ignore-case no-ignore-case exclude-vcs exclude-vcs-ignores exclude-backups exclude-caches \
    exclude-caches-all exclude-caches-under exclude-tag= exclude-tag-all= exclude-tag-under= \
    strip-components= transform|xform= show-transformed-names show-stored-names O|to-stdout \
    to-command=!x checkpoint? checkpoint-action=!x totals? b|blocking-factor= \
    B|read-full-records i|ignore-zeros W|verify w|interactive|confirmation \
    info-script|new-volume-script=!x F=!x rmt-command=!x rsh-command=!x index-file=!w \
    M|multi-volume L|tape-length= N|newer|after-date= newer-mtime= g|listed-incremental=!w \
    G|incremental S|sparse sparse-version= sort= format= H= posix V|label= o \
    warning= show-defaults one-file-system R|block-number utc full-time ignore-failed-read \
    no-recursion recursion delay-directory-restore no-delay-directory-restore acls no-acls \
    xattrs no-xattrs selinux no-selinux xattrs-include= xattrs-exclude= occurrence? \
    quoting-style= quote-chars= no-quote-chars= level= volno-file=!w backup? suffix= \
    K|starting-file= unquote no-unquote seek n no-seek restrict record-size= one-top-level? \
    hole-detection= add-file= verbatim-files-from no-verbatim-files-from ignore-command-error \
    no-ignore-command-error no-auto-compress check-device no-check-device help usage version \
    "
);

grammar!(
    SED,
    "sed",
    Getopt,
    true,
    "n|quiet|silent debug e|expression= f|file=!x \
    follow-symlinks i|in-place? l|line-length= b|binary posix E|r|regexp-extended \
    s|separate sandbox u|unbuffered z|null-data help version"
);

// gawk and mawk: gawk's long options and short letters, mawk's `-W`.
// Neither permutes (gawk's optstring starts with `+`).
grammar!(
    AWK,
    "awk",
    Getopt,
    false,
    "f|file=!x F|field-separator= v|assign= \
    b|characters-as-bytes c|traditional C|copyright d|dump-variables?!w D|debug?!x \
    e|source= E|exec=!x g|gen-pot h|help i|include=!x I|trace k|csv l|load=!x L|lint? \
    M|bignum N|use-lc-numeric n|non-decimal-data o|pretty-print?!w O|optimize \
    p|profile?!w P|posix r|re-interval s|no-optimize S|sandbox t|lint-old V|version \
    W= usage"
);
// mawk's `-W` values (mawk accepts unique prefixes of them too).
grammar!(
    MAWK_W,
    "mawk -W",
    Getopt,
    false,
    "exec=!x version dump interactive posix_space \
    random= sprintf= usage help repetitions traditional posix"
);

grammar!(
    SORT,
    "sort",
    Getopt,
    true,
    "b|ignore-leading-blanks d|dictionary-order \
    f|ignore-case g|general-numeric-sort i|ignore-nonprinting M|month-sort \
    h|human-numeric-sort n|numeric-sort R|random-sort random-source= r|reverse sort= \
    V|version-sort batch-size= c|check? C compress-program=!x debug files0-from= k|key= \
    m|merge o|output=!w s|stable S|buffer-size= t|field-separator= T|temporary-directory= \
    parallel= u|unique z|zero-terminated help version"
);

grammar!(
    RG,
    "rg",
    Exact,
    true,
    "A|after-context= B|before-context= C|context= c|count \
    count-matches color= colors= column no-column context-separator= no-context-separator \
    field-context-separator= field-match-separator= F|fixed-strings no-fixed-strings \
    L|follow no-follow g|glob= iglob= glob-case-insensitive no-glob-case-insensitive h|help \
    heading no-heading .|hidden no-hidden i|ignore-case S|smart-case s|case-sensitive \
    ignore-file= ignore-file-case-insensitive include-zero v|invert-match json no-json \
    j|threads= l|files-with-matches files-without-match files line-buffered block-buffered \
    n|line-number N|no-line-number x|line-regexp w|word-regexp m|max-count= max-columns= \
    M max-columns-preview d|max-depth|maxdepth= max-filesize= mmap no-mmap U|multiline \
    no-multiline multiline-dotall no-config no-ignore no-ignore-dot no-ignore-exclude \
    no-ignore-files no-ignore-global no-ignore-messages no-ignore-parent no-ignore-vcs \
    no-messages no-require-git 0|null null-data o|only-matching passthru|passthrough \
    P|pcre2 no-pcre2 path-separator= p|pretty q|quiet r|replace= sort= sortr= stats \
    no-stats T|type-not= t|type= type-add= type-clear= type-list u|unrestricted vimgrep \
    H|with-filename I|no-filename z|search-zip no-search-zip e|regexp= f|file= \
    E|encoding= engine= auto-hybrid-regex crlf no-crlf trim no-trim b|byte-offset binary \
    no-binary a|text no-text one-file-system no-one-file-system no-unicode unicode \
    dfa-size-limit= regex-size-limit= pre=!x pre-glob= hostname-bin=!x hyperlink-format= \
    debug trace V|version"
);

grammar!(
    FD,
    "fd",
    Exact,
    true,
    "H|hidden no-hidden I|no-ignore ignore no-ignore-vcs \
    no-ignore-parent u|unrestricted s|case-sensitive i|ignore-case g|glob regex \
    F|fixed-strings and= a|absolute-path relative-path l|list-details L|follow no-follow \
    p|full-path 0|print0 d|max-depth= min-depth= exact-depth= E|exclude= prune t|type= \
    e|extension= S|size= changed-within|change-newer-than|newer= \
    changed-before|change-older-than|older= o|owner= c|color= j|threads= x|exec=!x \
    X|exec-batch=!x batch-size= ignore-file= base-directory= path-separator= search-path= \
    strip-cwd-prefix? max-results= 1 q|quiet show-errors one-file-system format= h|help \
    V|version hyperlink?"
);

grammar!(
    SPLIT,
    "split",
    Getopt,
    true,
    "a|suffix-length= additional-suffix= b|bytes= \
    C|line-bytes= d numeric-suffixes? x hex-suffixes? e|elide-empty-files filter=!x \
    l|lines= n|number= t|separator= u|unbuffered verbose help version"
);

grammar!(
    ZIP,
    "zip",
    Getopt,
    true,
    "r|recurse-paths q|quiet v|verbose j|junk-paths \
    u|update f|freshen d|delete y|symlinks T|test D|no-dir-entries X|no-extra 0 1 2 3 4 5 \
    6 7 8 9 x|exclude= i|include= e|encrypt P|password= l|to-crlf o|latest-time \
    b|temp-path= n|suffixes= A|adjust-sfx F|fix g|grow m|move R|recurse-patterns \
    S|system-files O|output-file=!w h|help unzip-command=!x"
);

grammar!(
    RSYNC,
    "rsync",
    Getopt,
    true,
    "a|archive r|recursive v|verbose q|quiet \
    z|compress n|dry-run u|update l|links L|copy-links copy-unsafe-links safe-links \
    k|copy-dirlinks K|keep-dirlinks p|perms E|executability t|times U|atimes N|crtimes \
    O|omit-dir-times J|omit-link-times o|owner g|group D devices specials copy-devices \
    write-devices!w h|human-readable P progress partial partial-dir= delay-updates \
    m|prune-empty-dirs delete delete-after delete-before delete-during delete-delay \
    delete-excluded delete-missing-args ignore-missing-args ignore-errors force exclude= \
    include= exclude-from= include-from= files-from= f|filter= F from0 c|checksum \
    H|hard-links A|acls X|xattrs S|sparse W|whole-file x|one-file-system R|relative \
    no-implied-dirs i|itemize-changes stats size-only ignore-times I ignore-existing \
    existing remove-source-files b|backup backup-dir= suffix= chmod= chown= usermap= \
    groupmap= info= debug= log-file=!w log-file-format= T|temp-dir= compress-level= \
    compress-choice= checksum-choice= bwlimit= max-size= min-size= max-delete= timeout= \
    contimeout= port= e|rsh=!x rsync-path=!x M|remote-option=!x no-motd list-only \
    out-format= mkpath append append-verify inplace C|cvs-exclude modify-window= \
    numeric-ids 8|8-bit-output 4|ipv4 6|ipv6 s|secluded-args protect-args old-args \
    blocking-io outbuf= password-file= address= sockopts= iconv= stop-after= stop-at= \
    fuzzy y compare-dest= copy-dest= link-dest= fake-super super no-o no-g no-p no-t \
    version help"
);

// ---------------------------------------------------------------- wrappers

grammar!(
    ENV,
    "env",
    Getopt,
    false,
    "i|ignore-environment 0|null u|unset= C|chdir= \
    S|split-string= v|debug default-signal? ignore-signal? block-signal? \
    list-signal-handling help version"
);
grammar!(NICE, "nice", Getopt, false, "n|adjustment= help version");
grammar!(
    IONICE,
    "ionice",
    Getopt,
    false,
    "c|class= n|classdata= p|pid= P|pgid= t|ignore \
    u|uid= h|help V|version"
);
grammar!(
    TIMEOUT,
    "timeout",
    Getopt,
    false,
    "s|signal= k|kill-after= f|foreground \
    p|preserve-status v|verbose help version"
);
grammar!(NOHUP, "nohup", Getopt, false, "help version");
grammar!(BUILTIN, "builtin", Exact, false, "");
grammar!(
    GNU_TIME,
    "time",
    Getopt,
    false,
    "p|portability v|verbose q|quiet a|append \
    o|output=!w f|format= help V|version"
);
grammar!(
    STDBUF,
    "stdbuf",
    Getopt,
    false,
    "i|input= o|output= e|error= help version"
);
grammar!(
    SETSID,
    "setsid",
    Getopt,
    false,
    "c|ctty f|fork w|wait h|help V|version"
);
grammar!(
    CHRT,
    "chrt",
    Getopt,
    false,
    "a|all-tasks b|batch d|deadline e|ext f|fifo i|idle \
    o|other r|rr R|reset-on-fork v|verbose m|max p|pid T|sched-runtime= P|sched-period= \
    D|sched-deadline= h|help V|version"
);
grammar!(
    TASKSET,
    "taskset",
    Getopt,
    false,
    "a|all-tasks c|cpu-list p|pid h|help V|version"
);
grammar!(
    FLOCK,
    "flock",
    Getopt,
    false,
    "s|shared e|x|exclusive u|unlock n|nb|nonblock \
    w|wait|timeout= E|conflict-exit-code= o|close c|command= F|no-fork verbose h|help \
    V|version"
);
grammar!(COMMAND, "command", Exact, false, "p v V");
grammar!(EXEC, "exec", Exact, false, "c l a=");
grammar!(
    XARGS,
    "xargs",
    Getopt,
    false,
    "0|null a|arg-file= d|delimiter= E= e|eof? I= \
    i|replace? L= l|max-lines? n|max-args= P|max-procs= s|max-chars= o|open-tty \
    p|interactive r|no-run-if-empty t|verbose x|exit process-slot-var= show-limits help \
    version"
);
grammar!(
    CHROOT,
    "chroot",
    Getopt,
    false,
    "userspec= groups= skip-chdir help version"
);
grammar!(
    WATCH,
    "watch",
    Getopt,
    false,
    "d|differences? n|interval= p|precise t|no-title \
    b|beep e|errexit g|chgexit q|equexit= c|color C|no-color x|exec w|no-wrap|no-linewrap \
    r|no-rerun f|follow s|shotsfile= h|help v|version"
);
grammar!(DOAS, "doas", Exact, false, "n L s u= C=");
grammar!(
    PKEXEC,
    "pkexec",
    Getopt,
    false,
    "disable-internal-agent keep-cwd user= help version"
);
grammar!(
    SUDO,
    "sudo",
    Getopt,
    false,
    "A|askpass b|background B|bell C|close-from= \
    D|chdir= E|preserve-env? e|edit!x g|group= H|set-home h|host? i|login!x K|remove-timestamp \
    k|reset-timestamp l|list n|non-interactive N|no-update P|preserve-groups p|prompt= \
    R|chroot= r|role= S|stdin s|shell!x t|type= T|command-timeout= U|other-user= u|user= \
    V|version v|validate help"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_parses_without_duplicate_names() {
        let mut all: Vec<&Grammar> = vec![
            &GIT, &TAR, &SED, &AWK, &MAWK_W, &SORT, &RG, &FD, &SPLIT, &ZIP, &RSYNC, &ENV, &NICE,
            &IONICE, &TIMEOUT, &NOHUP, &BUILTIN, &GNU_TIME, &STDBUF, &SETSID, &CHRT, &TASKSET,
            &FLOCK, &COMMAND, &EXEC, &XARGS, &CHROOT, &WATCH, &DOAS, &PKEXEC, &SUDO,
        ];
        for s in [
            "status", "log", "commit", "push", "fetch", "clone", "archive", "help",
        ] {
            all.push(git_sub(s).unwrap());
        }
        for g in all {
            let mut longs = std::collections::HashSet::new();
            let mut shorts = std::collections::HashSet::new();
            for o in &g.opts {
                for l in &o.longs {
                    assert!(longs.insert(*l), "{}: --{l} twice", g.prog);
                }
                for c in &o.shorts {
                    assert!(shorts.insert(*c), "{}: -{c} twice", g.prog);
                }
            }
        }
    }
}
