//! Work on gotmpl's parse tree: find calls to functions that do not exist, and add the
//! position markers that let a runtime error name its line.
//!
//! gotmpl's execution errors carry no source position (its README lists this as a known
//! gap), and it looks functions up only when it calls them. Go reports both with a line,
//! and an operator fixing a ConfigMap needs it. So before execution every action, `if`,
//! `range`, `with` and `{{template}}` gets a marker action in front of it that records its
//! byte offset in a [`Tracker`] and prints nothing; the last offset recorded when an error
//! comes out is the action that failed. `{{else if}}` is parsed as an `if` inside the else
//! branch, so its condition gets a marker of its own.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use gotmpl::parse::{ActionNode, BranchNode, CommandNode, Expr, ListNode, Node, Number, PipeNode, Pos};
use gotmpl::{FuncMap, Value};

/// Go's builtin template functions, which gotmpl provides without listing them.
const BUILTINS: [&str; 19] = [
    "and", "call", "html", "index", "slice", "js", "len", "not", "or", "print", "printf", "println", "urlquery", "eq", "ge", "gt", "le",
    "lt", "ne",
];

/// The marker function's name: the colon keeps templates from calling it, since a
/// function name in a template is an identifier.
const MARKER: &str = "airlock:at";

/// The byte offset of the last action that started executing.
#[derive(Clone, Default)]
pub(super) struct Tracker(Arc<AtomicUsize>);

impl Tracker {
    /// Offset of the action running when execution stopped; 0 before the first one.
    pub fn offset(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    /// Forgets the last run's offset, before running again.
    pub fn reset(&self) {
        self.0.store(0, Ordering::Relaxed);
    }

    /// Registers the marker function in `funcs`.
    pub fn register(&self, funcs: &mut FuncMap) {
        let last = Arc::clone(&self.0);
        let nothing = Value::String(Arc::from(""));
        funcs.insert(
            MARKER.to_string(),
            Arc::new(move |args: &[Value]| {
                if let Some(Value::Int(offset)) = args.first() {
                    last.store(usize::try_from(*offset).unwrap_or(0), Ordering::Relaxed);
                }
                Ok(nothing.clone())
            }),
        );
    }
}

/// The first function named in `tree` that neither `funcs` nor Go's builtins define, with
/// the byte offset where it is named.
pub(super) fn undefined_function<'t>(tree: &'t ListNode, funcs: &FuncMap) -> Option<(&'t str, usize)> {
    let mut names = Vec::new();
    list_identifiers(tree, &mut names);
    names.into_iter().find(|(name, _)| !funcs.contains_key(*name) && !BUILTINS.contains(name))
}

fn list_identifiers<'t>(list: &'t ListNode, out: &mut Vec<(&'t str, usize)>) {
    for node in &list.nodes {
        match node {
            Node::List(inner) => list_identifiers(inner, out),
            Node::Action(action) => pipe_identifiers(&action.pipe, out),
            Node::If(branch) | Node::Range(branch) | Node::With(branch) => {
                pipe_identifiers(&branch.pipe, out);
                list_identifiers(&branch.body, out);
                if let Some(otherwise) = &branch.else_body {
                    list_identifiers(otherwise, out);
                }
            }
            Node::Template(call) => {
                if let Some(pipe) = &call.pipe {
                    pipe_identifiers(pipe, out);
                }
            }
            Node::Define(define) => list_identifiers(&define.body, out),
            Node::Text(_) | Node::Break(_) | Node::Continue(_) => {}
        }
    }
}

fn pipe_identifiers<'t>(pipe: &'t PipeNode, out: &mut Vec<(&'t str, usize)>) {
    for expr in pipe.commands.iter().flat_map(|command| &command.args) {
        expr_identifiers(expr, out);
    }
}

fn expr_identifiers<'t>(expr: &'t Expr, out: &mut Vec<(&'t str, usize)>) {
    match expr {
        Expr::Identifier(pos, name) => out.push((name.as_str(), pos.offset)),
        Expr::Pipe(_, pipe) => pipe_identifiers(pipe, out),
        Expr::Chain(_, inner, _) => expr_identifiers(inner, out),
        _ => {}
    }
}

/// `list` with a marker in front of every node that evaluates a pipeline.
pub(super) fn instrument(list: &ListNode) -> ListNode {
    let mut nodes = Vec::with_capacity(list.nodes.len() * 2);
    for node in &list.nodes {
        let (position, instrumented) = match node {
            Node::List(inner) => (None, Node::List(instrument(inner))),
            Node::Action(action) => (Some(action.pos), node.clone()),
            Node::If(branch) => (Some(branch.pos), Node::If(instrument_branch(branch))),
            Node::Range(branch) => (Some(branch.pos), Node::Range(instrument_branch(branch))),
            Node::With(branch) => (Some(branch.pos), Node::With(instrument_branch(branch))),
            Node::Template(call) => (Some(call.pos), node.clone()),
            Node::Define(define) => {
                let mut define = define.clone();
                define.body = instrument(&define.body);
                (None, Node::Define(define))
            }
            Node::Text(_) | Node::Break(_) | Node::Continue(_) => (None, node.clone()),
        };
        if let Some(pos) = position {
            nodes.push(marker(pos));
        }
        nodes.push(instrumented);
    }
    ListNode { pos: list.pos, nodes }
}

fn instrument_branch(branch: &BranchNode) -> BranchNode {
    BranchNode {
        pos: branch.pos,
        pipe: branch.pipe.clone(),
        body: instrument(&branch.body),
        else_body: branch.else_body.as_ref().map(instrument),
    }
}

fn marker(pos: Pos) -> Node {
    let offset = i64::try_from(pos.offset).unwrap_or(i64::MAX);
    Node::Action(ActionNode {
        pos,
        pipe: PipeNode {
            pos,
            decl: Vec::new(),
            commands: vec![CommandNode { pos, args: vec![Expr::Identifier(pos, MARKER.into()), Expr::Number(pos, Number::Int(offset))] }],
            is_assign: false,
        },
    })
}
