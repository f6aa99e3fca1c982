//! The papers set of `cargo xtask bench pdf --quality --papers`: real
//! statistics papers, many of them as published in the Journal of
//! Statistical Software, that Debian ships as R package vignettes (76 PDFs,
//! 1,485 pages, with code listings, formulas and tables). The manuals-and-templates set has few real papers
//! and many one-paragraph-per-section samples; this one is what a user's
//! library looks like.
//!
//! The packages are fetched with `apt-get download` and unpacked with
//! `dpkg-deb -x` under `target/xtask-kb/papers/` (no R is installed). Some of
//! them were made with dvips' bitmap fonts, whose letters PDFium reads as
//! Zapf Dingbats (spatstat's, lme4's PLSvGLS): the converter's
//! `pdf::dingbats` is measured here.

use std::path::{Path, PathBuf};

/// The Debian 12 packages (versions as of 2026-12: r-cran-lme4 1.1-31-1,
/// r-cran-zoo 1.8-11, …); `apt-get download` takes the current one.
const DEBS: &[&str] = &[
    "r-cran-actuar",
    "r-cran-aer",
    "r-cran-coin",
    "r-cran-flexmix",
    "r-cran-lme4",
    "r-cran-lmtest",
    "r-cran-mcmc",
    "r-cran-multcomp",
    "r-cran-mvtnorm",
    "r-cran-party",
    "r-cran-partykit",
    "r-cran-pscl",
    "r-cran-quantreg",
    "r-cran-rcpp",
    "r-cran-rcpparmadillo",
    "r-cran-rcppeigen",
    "r-cran-rgenoud",
    "r-cran-rmpfr",
    "r-cran-sandwich",
    "r-cran-sp",
    "r-cran-spatstat",
    "r-cran-strucchange",
    "r-cran-survival",
    "r-cran-vcd",
    "r-cran-xts",
    "r-cran-zoo",
];

/// The PDFs, under `usr/lib/R/` of the unpacked packages: every vignette
/// of five pages or more except quick references, change logs and data
/// set lists.
pub const PAPERS: &[&str] = &[
    "library/survival/doc/survival.pdf",
    "library/survival/doc/discrim.pdf",
    "library/survival/doc/population.pdf",
    "library/survival/doc/splines.pdf",
    "library/survival/doc/timedep.pdf",
    "library/survival/doc/validate.pdf",
    "library/survival/doc/compete.pdf",
    "library/survival/doc/adjcurve.pdf",
    "library/survival/doc/concordance.pdf",
    "site-library/vcd/doc/strucplot.pdf",
    "site-library/vcd/doc/residual-shadings.pdf",
    "site-library/spatstat/doc/replicated.pdf",
    "site-library/spatstat/doc/shapefiles.pdf",
    "site-library/spatstat/doc/getstart.pdf",
    "site-library/coin/doc/LegoCondInf.pdf",
    "site-library/coin/doc/MAXtest.pdf",
    "site-library/coin/doc/coin.pdf",
    "site-library/coin/doc/Implementation.pdf",
    "site-library/strucchange/doc/strucchange-intro.pdf",
    "site-library/sandwich/doc/sandwich-CL.pdf",
    "site-library/sandwich/doc/sandwich-OOP.pdf",
    "site-library/sandwich/doc/sandwich.pdf",
    "site-library/Rcpp/doc/Rcpp-introduction.pdf",
    "site-library/Rcpp/doc/Rcpp-sugar.pdf",
    "site-library/Rcpp/doc/Rcpp-modules.pdf",
    "site-library/Rcpp/doc/Rcpp-FAQ.pdf",
    "site-library/Rcpp/doc/Rcpp-jss-2011.pdf",
    "site-library/Rcpp/doc/Rcpp-attributes.pdf",
    "site-library/multcomp/doc/generalsiminf.pdf",
    "site-library/multcomp/doc/chfls1.pdf",
    "site-library/multcomp/doc/multcomp-examples.pdf",
    "site-library/AER/doc/AER.pdf",
    "site-library/rgenoud/doc/rgenoud.pdf",
    "site-library/xts/doc/xts-faq.pdf",
    "site-library/xts/doc/xts.pdf",
    "site-library/quantreg/doc/rq.pdf",
    "site-library/quantreg/doc/crq.pdf",
    "site-library/RcppEigen/doc/RcppEigen-Introduction.pdf",
    "site-library/mcmc/doc/debug.pdf",
    "site-library/mcmc/doc/temper.pdf",
    "site-library/mcmc/doc/metrop.pdf",
    "site-library/mcmc/doc/demo.pdf",
    "site-library/mcmc/doc/bfst.pdf",
    "site-library/mcmc/doc/morph.pdf",
    "site-library/zoo/doc/zoo-faq.pdf",
    "site-library/zoo/doc/zoo-read.pdf",
    "site-library/zoo/doc/zoo.pdf",
    "site-library/sp/doc/intro_sp.pdf",
    "site-library/sp/doc/csdacm.pdf",
    "site-library/sp/doc/over.pdf",
    "site-library/flexmix/doc/flexmix-intro.pdf",
    "site-library/flexmix/doc/bootstrapping.pdf",
    "site-library/flexmix/doc/mixture-regressions.pdf",
    "site-library/flexmix/doc/regression-examples.pdf",
    "site-library/RcppArmadillo/doc/RcppArmadillo-intro.pdf",
    "site-library/RcppArmadillo/doc/RcppArmadillo-sparseMatrix.pdf",
    "site-library/pscl/doc/countreg.pdf",
    "site-library/partykit/doc/mob.pdf",
    "site-library/partykit/doc/partykit.pdf",
    "site-library/partykit/doc/constparty.pdf",
    "site-library/partykit/doc/ctree.pdf",
    "site-library/Rmpfr/doc/Rmpfr-pkg.pdf",
    "site-library/Rmpfr/doc/log1mexp-note.pdf",
    "site-library/party/doc/MOB.pdf",
    "site-library/party/doc/party.pdf",
    "site-library/actuar/doc/credibility.pdf",
    "site-library/actuar/doc/coverage.pdf",
    "site-library/actuar/doc/risk.pdf",
    "site-library/actuar/doc/simulation.pdf",
    "site-library/actuar/doc/distributions.pdf",
    "site-library/actuar/doc/modeling.pdf",
    "site-library/lmtest/doc/lmtest-intro.pdf",
    "site-library/mvtnorm/doc/MVT_Rnews.pdf",
    "site-library/lme4/doc/lmer.pdf",
    "site-library/lme4/doc/Theory.pdf",
    "site-library/lme4/doc/PLSvGLS.pdf",
];

fn dir(root: &Path) -> PathBuf {
    root.join("target/xtask-kb/papers")
}

/// Where the packages' `usr/lib/R` lands once unpacked.
fn unpacked(root: &Path) -> PathBuf {
    dir(root).join("root/usr/lib/R")
}

/// The set's paths, fetching and unpacking the packages on first use.
pub fn files(root: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let paths: Vec<PathBuf> = PAPERS.iter().map(|p| unpacked(root).join(p)).collect();
    if paths.iter().all(|p| p.exists()) {
        return Ok(paths);
    }
    let debs = dir(root).join("debs");
    std::fs::create_dir_all(&debs)?;
    eprintln!(
        "bench pdf --quality --papers: fetching {} packages with apt-get download",
        DEBS.len()
    );
    let download = || {
        std::process::Command::new("apt-get")
            .arg("download")
            .args(DEBS)
            .current_dir(&debs)
            .status()
    };
    if !download()?.success() {
        // A fresh machine has no package lists yet.
        crate::pdf_quality::apt(&["update", "-qq"])?;
        let s = download()?;
        anyhow::ensure!(
            s.success(),
            "apt-get download failed ({s}); is this Debian 12 with its package lists?"
        );
    }
    for deb in std::fs::read_dir(&debs)? {
        let deb = deb?.path();
        if deb.extension().is_some_and(|e| e == "deb") {
            let s = std::process::Command::new("dpkg-deb")
                .arg("-x")
                .arg(&deb)
                .arg(dir(root).join("root"))
                .status()?;
            anyhow::ensure!(s.success(), "dpkg-deb -x {} failed ({s})", deb.display());
        }
    }
    Ok(paths)
}

/// The `--out`/`--score-markdown` key of a paper: its path under
/// `usr/lib/R/`, `/` as `_`, prefixed `R_` (`R_site-library_zoo_doc_zoo`).
pub fn key(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(unpacked(root)).ok()?;
    let rel = rel.to_string_lossy();
    let rel = rel.strip_suffix(".pdf").unwrap_or(&rel);
    Some(format!("R_{}", rel.replace(['/', '\\'], "_")))
}
