//! The machine-checked proofs in `proofs/formal/` (Coq 8.16, Flocq 4.1): compiled here, the
//! lemmas `theorems::formal` names may rest only on the standard axioms of Coq's reals (one
//! `Print Assumptions` of a term holding them all; one per lemma where that finds another
//! axiom, to name the lemma); and `Constants.v` must be exactly what the judge's constants
//! generate, so that the proofs and the bound cannot drift apart.
//!
//! Without `coqc` the proof test fails and names the Debian packages; `NORMORACLE_SKIP_COQ=1`
//! skips it deliberately (CI never sets it).

use normoracle_geometry::theorems::formal::{coq_constants, JUDGE_LEMMAS, PROOFS};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const PACKAGES: &str = "apt-get install -y coq libcoq-flocq";

/// The only axioms a proof may use: those Coq 8.16's real numbers rest on (the classical
/// Dedekind construction) and the excluded middle (Flocq's rounding lemmas use it).
const STANDARD_AXIOMS: &[&str] = &[
    "ClassicalDedekindReals.sig_forall_dec",
    "ClassicalDedekindReals.sig_not_dec",
    "FunctionalExtensionality.functional_extensionality_dep",
    "Classical_Prop.classic",
];

fn formal_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("proofs/formal")
}

/// The development's files in dependency order, from `_CoqProject`.
fn sources() -> Vec<String> {
    let project = fs::read_to_string(formal_dir().join("_CoqProject")).expect("_CoqProject");
    project
        .lines()
        .map(str::trim)
        .filter(|l| l.ends_with(".v"))
        .map(String::from)
        .collect()
}

#[test]
fn constants_v_is_generated_from_the_judge() {
    let path = formal_dir().join("Constants.v");
    let expected = coq_constants();
    if std::env::var_os("NORMORACLE_BLESS").is_some() {
        fs::write(&path, &expected).expect("write Constants.v");
    }
    let actual = fs::read_to_string(&path).unwrap_or_default();
    assert!(
        actual == expected,
        "proofs/formal/Constants.v differs from the judge's constants (crates/oracle/src/judge/tolerance.rs): \
         regenerate it with `NORMORACLE_BLESS=1 cargo test --test formal_proofs` and make the \
         proofs compile with the new constants\n--- expected ---\n{expected}"
    );
}

/// A Coq source without its comments (nested `(* … *)`), so that prose may cite the numbers.
fn without_comments(text: &str) -> String {
    let (mut out, mut depth, mut rest) = (String::new(), 0usize, text);
    while !rest.is_empty() {
        if rest.starts_with("(*") {
            depth += 1;
            rest = &rest[2..];
        } else if depth > 0 && rest.starts_with("*)") {
            depth -= 1;
            rest = &rest[2..];
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            if depth == 0 {
                out.push(c);
            }
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// The literal forms of the bound's structural constants (whitespace removed) that the proofs
/// must write by their `Constants.v` names instead, and the name each file must use.
const FORBIDDEN_LITERALS: &[(&str, &str)] = &[
    ("d+10", "cap_exponent_offset (CAP_EXPONENT_OFFSET)"),
    ("c3:=(1+u)^3", "output_roundings (OUTPUT_ROUNDINGS)"),
    ("+2)/2", "shifted_weight (SHIFTED_WEIGHT_*)"),
    ("(INRd-1)*(INRd+", "shifted_weight (SHIFTED_WEIGHT_*)"),
    (
        "abs_sumt<=bpow(p+e)->",
        "grid_headroom_bits (GRID_HEADROOM_BITS)",
    ),
    (
        "<=bpowradix2(p+e)->",
        "grid_headroom_bits (GRID_HEADROOM_BITS)",
    ),
    ("(p_f32+e)", "grid_headroom_bits (GRID_HEADROOM_BITS)"),
    ("(p_f64+e)", "grid_headroom_bits (GRID_HEADROOM_BITS)"),
];

/// Where each generated name must be used (so that the check above cannot pass by deletion).
const REQUIRED_NAMES: &[(&str, &str)] = &[
    ("Cap.v", "cap_exponent_offset"),
    ("LayerNorm.v", "output_roundings"),
    ("Shifted.v", "shifted_weight"),
    ("Summation.v", "grid_headroom_bits"),
    ("LayerNorm.v", "grid_headroom_bits"),
    ("Shifted.v", "grid_headroom_bits"),
    ("Judge.v", "grid_headroom_bits"),
];

#[test]
fn proofs_use_the_generated_constants_not_literals() {
    let (cap_offset, weight_high) = (
        normoracle::judge::tolerance::CAP_EXPONENT_OFFSET,
        normoracle::judge::tolerance::SHIFTED_WEIGHT_HIGH,
    );
    // The patterns spell today's values: a test to update with them.
    assert_eq!((cap_offset, weight_high), (10, 2));
    for file in sources().iter().filter(|f| f.as_str() != "Constants.v") {
        let text = fs::read_to_string(formal_dir().join(file)).expect("source");
        let code: String = without_comments(&text)
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        for (literal, name) in FORBIDDEN_LITERALS {
            assert!(
                !code.contains(literal),
                "{file} writes `{literal}`: use {name} from Constants.v, generated from \
                 crates/oracle/src/judge/tolerance.rs"
            );
        }
    }
    for (file, name) in REQUIRED_NAMES {
        let text = fs::read_to_string(formal_dir().join(file)).expect("source");
        assert!(
            without_comments(&text).contains(name),
            "{file} no longer uses `{name}` (Constants.v)"
        );
    }
}

#[test]
fn the_literal_check_sees_a_reintroduced_literal() {
    let code: String = without_comments(
        "(* (d + 10) in prose is fine *)\nDefinition two_pass_cap d := (1 - u) ^ (d + 10).",
    )
    .chars()
    .filter(|c| !c.is_whitespace())
    .collect();
    assert!(code.contains("d+10") && !code.contains("prose"));
}

fn coqc_available() -> bool {
    Command::new("coqc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs coqc on `file` (in `dir`, the development mapped to `Normoracle`); its stdout.
fn coqc(dir: &Path, file: &str) -> String {
    let out = Command::new("coqc")
        .current_dir(dir)
        .args(["-q", "-Q", ".", "Normoracle", file])
        .output()
        .expect("run coqc");
    assert!(
        out.status.success(),
        "coqc {file} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The axioms a `Print Assumptions` block lists: every line at column 0 after `Axioms:` starts
/// with one (its type follows after " : ", on the same line or indented below).
fn axioms(block: &str) -> Vec<String> {
    if block.contains("Closed under the global context") {
        return Vec::new();
    }
    let body = block.split_once("Axioms:").map_or("", |(_, b)| b);
    body.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with(char::is_whitespace))
        .map(|l| l.split(" : ").next().unwrap_or("").trim().to_string())
        .collect()
}

#[test]
fn proofs_compile_and_rest_only_on_the_standard_axioms() {
    if !coqc_available() {
        if std::env::var("NORMORACLE_SKIP_COQ").as_deref() == Ok("1") {
            eprintln!("NORMORACLE_SKIP_COQ=1: the Coq proofs were NOT checked");
            return;
        }
        panic!(
            "coqc not found: the proofs in proofs/formal/ need Coq 8.16 and Flocq 4.1 \
             (Debian: `{PACKAGES}`); NORMORACLE_SKIP_COQ=1 skips this test deliberately"
        );
    }
    // Compile a copy, so that the source tree stays free of build products.
    let build = Path::new(env!("CARGO_TARGET_TMPDIR")).join("formal");
    let _ = fs::remove_dir_all(&build);
    fs::create_dir_all(&build).expect("build dir");
    let files = sources();
    for file in &files {
        let text = fs::read_to_string(formal_dir().join(file)).expect("source");
        for banned in ["Admitted", "admit.", "Axiom ", "Parameter ", "Conjecture "] {
            assert!(!text.contains(banned), "{file} contains `{banned}`");
        }
        fs::write(build.join(file), text).expect("copy");
        coqc(&build, file);
    }
    // Every named lemma, qualified by its file, with a marker line before its assumptions.
    let mut named: Vec<(String, String)> = PROOFS
        .iter()
        .flat_map(|p| {
            p.lemmas
                .iter()
                .map(move |l| (p.file.to_string(), l.to_string()))
        })
        .collect();
    named.extend(
        JUDGE_LEMMAS
            .iter()
            .map(|(f, l)| (f.to_string(), l.to_string())),
    );
    for (file, _) in &named {
        assert!(files.contains(file), "{file} is not in _CoqProject");
    }
    // First one `Print Assumptions` of a term that holds every lemma: its axioms are the
    // union of theirs, and Coq walks their shared dependencies once (one print per lemma
    // walked them again each time: about 110 s of a 2-core machine, where this takes a few).
    // Only where the union leaves the standard axioms are the lemmas printed one by one, to
    // name the one that does.
    let printed = coqc_script(&build, &files, &assumptions_of_all(&named));
    let union = printed
        .split_once("= \"@@ every lemma\"")
        .map(|(_, rest)| rest)
        .unwrap_or_else(|| panic!("no Print Assumptions of the lemmas:\n{printed}"));
    if axioms(union)
        .iter()
        .all(|a| STANDARD_AXIOMS.contains(&a.as_str()))
    {
        return;
    }
    let printed = coqc_script(&build, &files, &assumptions_of_each(&named));
    println!("{printed}");
    let blocks: Vec<&str> = printed.split("= \"@@ ").skip(1).collect();
    assert_eq!(
        blocks.len(),
        named.len(),
        "one Print Assumptions per lemma:\n{printed}"
    );
    for block in blocks {
        let name = block.split('"').next().unwrap_or("?");
        for axiom in axioms(block) {
            assert!(
                STANDARD_AXIOMS.contains(&axiom.as_str()),
                "{name} assumes {axiom}, beyond the reals' standard axioms:\n{block}"
            );
        }
    }
    panic!("the lemmas together assume more than the standard axioms:\n{union}");
}

/// `Module.lemma` of a (file, lemma) pair.
fn qualified((file, lemma): &(String, String)) -> String {
    format!("{}.{lemma}", file.trim_end_matches(".v"))
}

/// A script that prints the assumptions of one term holding every lemma.
fn assumptions_of_all(named: &[(String, String)]) -> String {
    let lemmas: Vec<String> = named
        .iter()
        .map(|n| format!("@Normoracle.{}", qualified(n)))
        .collect();
    format!(
        "Definition normoracle_every_lemma := (tt, {}).\n\
         Compute \"@@ every lemma\"%string.\n\
         Print Assumptions normoracle_every_lemma.\n",
        lemmas.join(", ")
    )
}

/// A script that prints each lemma's assumptions, after a marker line with its name.
fn assumptions_of_each(named: &[(String, String)]) -> String {
    named
        .iter()
        .map(|n| {
            let name = qualified(n);
            format!("Compute \"@@ {name}\"%string.\nPrint Assumptions Normoracle.{name}.\n")
        })
        .collect()
}

/// Compiles `body` as `Assumptions.v` in `build`, after the imports of the development's
/// `files`; coqc's stdout.
fn coqc_script(build: &Path, files: &[String], body: &str) -> String {
    let modules: Vec<&str> = files.iter().map(|f| f.trim_end_matches(".v")).collect();
    let script = format!(
        "From Coq Require Import String.\nFrom Normoracle Require {}.\n{body}",
        modules.join(" ")
    );
    fs::write(build.join("Assumptions.v"), script).expect("script");
    coqc(build, "Assumptions.v")
}

#[test]
fn the_assumption_parser_sees_a_foreign_axiom() {
    let block = "Axioms:\nfoo : forall x : R, x = 0\nClassicalDedekindReals.sig_not_dec\n  : forall P : Prop, {~ ~ P} + {~ P}\n";
    assert_eq!(axioms(block), ["foo", "ClassicalDedekindReals.sig_not_dec"]);
    assert!(axioms("Closed under the global context\n").is_empty());
}
