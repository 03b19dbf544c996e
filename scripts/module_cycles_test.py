#!/usr/bin/env python3
"""Tests of scripts/module-cycles.py: small fake crates in a temporary folder, the checker run on
them as the test command runs it. Stdlib only: python3 scripts/module_cycles_test.py"""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "module-cycles.py")


class ModuleCycles(unittest.TestCase):
    def run_on(self, files, cwd_root=False):
        """Write {path under crates/: text} to a fresh root, run the checker: (exit code, out)."""
        with tempfile.TemporaryDirectory() as root:
            for rel, text in files.items():
                path = os.path.join(root, "crates", rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(textwrap.dedent(text).lstrip("\n"))
            args = [sys.executable, SCRIPT] + ([] if cwd_root else [root])
            done = subprocess.run(args, cwd=root if cwd_root else None, capture_output=True,
                                  text=True, timeout=60)
        self.assertEqual(done.stderr, "")
        return done.returncode, done.stdout

    def assert_circle(self, files, *names):
        code, out = self.run_on(files)
        self.assertEqual(code, 1, out)
        heading = out.splitlines()[0]
        self.assertIn("files import each other in a circle: ", heading)
        for name in names:
            self.assertIn(name, heading, out)
        return out

    def assert_clean(self, files):
        code, out = self.run_on(files)
        self.assertEqual((code, out), (0, "no module import cycles\n"))

    # --- circles that must be caught -----------------------------------------------------------
    def test_two_files_in_a_circle_fail_and_are_named_with_the_imports(self):
        out = self.assert_circle({
            "app/src/lib.rs": "mod a;\nmod b;\n",
            "app/src/a.rs": "use crate::b::B;\npub struct A;\n",
            "app/src/b.rs": "pub struct B;\npub fn f() -> crate::a::A { crate::a::A }\n",
        }, "a.rs", "b.rs")
        self.assertIn("crates/app: files import each other in a circle: a.rs -> b.rs -> a.rs", out)
        self.assertIn("a.rs -> b.rs (crate::b::B, at a.rs:1)", out)
        self.assertIn("b.rs -> a.rs (crate::a::A, at b.rs:2)", out)

    def test_a_circle_is_reported_once(self):
        out = self.assert_circle({
            "app/src/lib.rs": "mod a;\nmod b;\nmod c;\n",
            "app/src/a.rs": "use crate::b::B;\nuse crate::c::C;\npub struct A;\n",
            "app/src/b.rs": "use crate::c::C;\npub struct B;\n",
            "app/src/c.rs": "use crate::a::A;\npub struct C;\n",
        }, "a.rs", "c.rs")
        self.assertEqual(out.count("files import each other"), 1, out)
        self.assertIn("the circle holds 3 files: a.rs, b.rs, c.rs", out)

    def test_a_circle_through_super(self):
        self.assert_circle({
            "app/src/lib.rs": "mod m;\n",
            "app/src/m/mod.rs": "mod x;\nmod y;\n",
            "app/src/m/x.rs": "use super::y::Y;\npub struct X;\n",
            "app/src/m/y.rs": "pub struct Y;\npub fn f() { let _ = super::x::X; }\n",
        }, "m/x.rs", "m/y.rs")

    def test_a_circle_through_super_super(self):
        self.assert_circle({
            "app/src/lib.rs": "mod m;\nmod top;\n",
            "app/src/m.rs": "mod k;\n",
            "app/src/m/k.rs": "use super::super::top::T;\npub struct K;\n",
            "app/src/top.rs": "pub struct T;\npub fn f(_: crate::m::k::K) {}\n",
        }, "m/k.rs", "top.rs")

    def test_a_circle_through_a_nested_multi_line_use_group(self):
        out = self.assert_circle({
            "app/src/lib.rs": "mod a;\nmod b;\nmod x;\n",
            "app/src/a.rs": """
                use crate::{
                    x::X,
                    b::{self, inner::{B as Bee}},
                };
                pub struct A;
            """,
            "app/src/b/mod.rs": "pub mod inner;\n",
            "app/src/b/inner.rs": "use crate::a::A;\npub struct B;\n",
            "app/src/x.rs": "pub struct X;\n",
        }, "a.rs", "b/inner.rs")
        self.assertIn("(crate::b::inner::B, at a.rs:1)", out)

    def test_a_circle_through_a_child_module_path_and_a_glob(self):
        self.assert_circle({
            "app/src/lib.rs": "mod a;\nmod b;\n",
            "app/src/a.rs": "mod helper;\npub fn f() { helper::g() }\n",
            "app/src/a/helper.rs": "use crate::b::*;\npub fn g() {}\n",
            "app/src/b.rs": "use crate::a as alias;\npub fn h() { alias::f() }\n",
        }, "a.rs", "b.rs")

    def test_a_circle_through_a_re_export_in_lib_rs(self):
        out = self.assert_circle({
            "app/src/lib.rs": "mod a;\nmod b;\n\npub use b::Name;\n",
            "app/src/a.rs": "use crate::Name;\npub fn fa(_: Name) {}\n",
            "app/src/b.rs": "pub struct Name;\npub fn g() { crate::a::fa(Name) }\n",
        }, "a.rs", "b.rs")
        self.assertNotIn("lib.rs", out)

    def test_a_re_export_chain_resolves_to_where_the_name_lives(self):
        out = self.assert_circle({
            "app/src/lib.rs": "mod a;\nmod mid;\npub(crate) use mid::Name;\n",
            "app/src/mid/mod.rs": "mod leaf;\npub use self::leaf::Name;\n",
            "app/src/mid/leaf.rs": "use crate::a::fa;\npub struct Name;\n",
            "app/src/a.rs": "pub fn fa(_: crate::Name) {}\n",
        }, "a.rs", "mid/leaf.rs")
        self.assertNotIn("mid/mod.rs", out)
        self.assertNotIn("lib.rs", out)

    def test_an_import_after_a_test_module_is_read(self):
        self.assert_circle({
            "app/src/lib.rs": "mod a;\nmod b;\n",
            "app/src/a.rs": """
                #[cfg(test)]
                mod tests {
                    use super::*;
                    const S: &str = "} {{";  // a } in a comment
                    const C: char = '}';
                    /* } /* nested } */ } */
                    #[test]
                    fn t<'a>(_: &'a str) { let _ = r#"}"#; }
                }

                const Q: char = '"';
                use crate::b::B;
                pub struct A;
                const S: &str = "a string after the char";
            """,
            "app/src/b.rs": "use crate::a::A;\npub struct B;\n",
        }, "a.rs", "b.rs")

    def test_a_mod_rs_with_code_that_uses_its_child_is_an_importer(self):
        self.assert_circle({
            "app/src/lib.rs": "mod m;\n",
            "app/src/m/mod.rs": "mod x;\nuse x::helper;\npub struct Cfg;\n"
                                "pub fn f() { helper() }\n",
            "app/src/m/x.rs": "use super::Cfg;\npub fn helper() {}\n",
        }, "m/mod.rs", "m/x.rs")

    def test_a_file_declared_by_path_is_its_module(self):
        self.assert_circle({
            "app/src/lib.rs": "mod config;\n",
            "app/src/config.rs": '#[path = "config_parse.rs"]\nmod parse;\npub struct C;\n'
                                 "pub fn f() { parse::p() }\n",
            "app/src/config_parse.rs": "use super::C;\npub fn p() {}\n",
        }, "config.rs", "config_parse.rs")

    def test_the_engine_adapters_of_the_client_are_files_like_any_other(self):
        # No folder is one node any more (the engine folder was, until its dispatcher's types
        # moved out of mod.rs): an adapter that imports the dispatcher importing it is a circle.
        self.assert_circle({
            "client/src/lib.rs": "mod server;\npub use server::engine::Engine;\n",
            "client/src/server/mod.rs": "pub mod engine;\n",
            "client/src/server/engine/mod.rs": "mod vllm;\nuse vllm::V;\npub struct Engine;\n"
                                               "pub fn pick() -> V { V }\n",
            "client/src/server/engine/vllm.rs": "use super::Engine;\npub struct V;\n",
        }, "server/engine/mod.rs", "server/engine/vllm.rs")

    # --- what must not be reported -------------------------------------------------------------
    def test_an_import_in_test_code_only_makes_no_edge(self):
        self.assert_clean({
            "app/src/lib.rs": "mod a;\nmod b;\n",
            "app/src/a.rs": """
                pub struct A;
                #[cfg(test)]
                mod tests {
                    use crate::b;
                }
                #[cfg(all(test, feature = "x"))]
                use crate::b::B;
                #[test]
                fn t() { crate::b::f(); }
                #[cfg(test)]
                #[path = "a_tests.rs"]
                mod more;
                #[cfg(test)]
                mod helper;
            """,
            "app/src/a_tests.rs": "use crate::b::B;\n",
            "app/src/a/helper.rs": "use crate::b::B;\n",
            "app/src/tests/mod.rs": "use crate::b::B;\n",
            "app/src/only_test.rs": "#![cfg(test)]\nuse crate::b::B;\n",
            "app/src/b.rs": "use crate::a::A;\npub struct B;\npub fn f() {}\n",
        })

    def test_comments_and_strings_naming_a_module_make_no_edge(self):
        self.assert_clean({
            "app/src/lib.rs": "mod a;\nmod b;\n",
            "app/src/a.rs": """
                //! Talks to crate::b::B.
                /// See [`crate::b::B`].
                // use crate::b::B;
                /* crate::b::B /* nested */ crate::b::B */
                pub const S: &str = "use crate::b::B; \\" crate::b::f()";
                pub const R: &str = r#"a " crate::b::B "#;
                pub const Q: char = '"';
                pub const L: &[u8] = b"crate::b::B";
                pub struct A;
            """,
            "app/src/b.rs": "use crate::a::A;\npub struct B;\n",
        })

    def test_a_mod_rs_re_exporting_its_children_is_no_circle(self):
        self.assert_clean({
            "app/src/lib.rs": "mod m;\npub use m::{X, Y};\n",
            "app/src/m/mod.rs": "mod x;\nmod y;\n\npub use x::X;\npub(crate) use y::Y;\n",
            "app/src/m/x.rs": "use super::Y;\nuse crate::m::Y as Why;\npub struct X;\n",
            "app/src/m/y.rs": "use super::*;\npub struct Y;\n",
        })

    def test_a_mod_rs_using_a_name_it_re_exports_from_a_child_is_an_importer(self):
        self.assert_circle({
            "app/src/lib.rs": "mod m;\n",
            "app/src/m/mod.rs": "mod x;\npub use x::X;\npub struct Cfg;\n"
                                "pub fn make() -> X { X }\n",
            "app/src/m/x.rs": "use super::Cfg;\npub struct X;\n",
        }, "m/mod.rs", "m/x.rs")

    def test_a_room_importing_a_room_its_comment_does_not_allow_fails(self):
        files = {
            "client/src/lib.rs": "mod low;\nmod high;\nmod free;\nmod undeclared;\n",
            "client/src/low/mod.rs": "//! The low room.\n//!\n//! May import: `llmib-core` only.\n"
                                     "//! Never `high`.\npub(crate) mod a;\n",
            "client/src/low/a.rs": "pub struct A;\n",
            "client/src/high/mod.rs": "//! May import: `low` and\n//! `free`. Not more.\n"
                                      "pub(crate) mod b;\n",
            "client/src/high/b.rs": "use crate::low::a::A;\npub struct B(pub A);\n",
            "client/src/free/mod.rs": "//! May import: nothing of this crate.\npub(crate) mod c;\n",
            "client/src/undeclared/mod.rs": "pub(crate) mod d;\n",
            "client/src/undeclared/d.rs": "pub fn d() -> crate::high::b::B { todo!() }\n",
            "client/src/free/c.rs": "pub struct C;\n",
        }
        self.assert_clean(files)
        files["client/src/low/a.rs"] = "pub struct A;\npub fn f() -> crate::free::c::C { todo!() }\n"
        code, out = self.run_on(files)
        self.assertEqual(code, 1, out)
        self.assertIn("crates/client: room low/ imports free/ (it may import no other room): "
                      "low/a.rs -> free/c.rs (crate::free::c::C, at low/a.rs:2)", out)
        self.assertNotIn("circle", out)

    def test_a_layered_tree_passes(self):
        code, out = self.run_on({
            "app/src/lib.rs": "mod a;\nmod b;\nmod c;\npub use a::A;\n#[cfg(test)]\nmod tests;\n",
            "app/src/a.rs": "use crate::b::{self, B};\nuse std::fmt;\npub struct A(B);\n",
            "app/src/b.rs": "use super::c::C;\nuse crate::c;\npub struct B(C);\n",
            "app/src/c.rs": "use serde::Serialize;\npub struct C;\n"
                            "pub fn f() { ::std::mem::drop(()) }\n",
            "app/src/tests.rs": "use crate::a::A;\nuse crate::c::C;\n",
            "other/src/main.rs": "mod x;\nfn main() { x::run() }\n",
            "other/src/x.rs": "pub fn run() {}\n",
        }, cwd_root=True)
        self.assertEqual((code, out), (0, "no module import cycles\n"))


if __name__ == "__main__":
    unittest.main()
