//! Renders every report of a results directory without the CLI, for working on templates:
//! `cargo run -p llmib-report --example render -- testdata/seed-run /tmp/out/`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().ok_or("usage: render RUN_DIR [OUTPUT_DIR/]")?;
    let out = args.next();
    let written = llmib_report::write_reports(
        std::path::Path::new(&dir),
        &[],
        out.as_deref().map(std::path::Path::new),
    )?;
    for p in written {
        println!("{}", p.display());
    }
    Ok(())
}
