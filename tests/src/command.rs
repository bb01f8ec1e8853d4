//! Running a short command of this machine (`ip`, `ctr`, `umount`) and keeping what it printed.

use crate::Error;

/// Runs `program args…` to completion; returns its stdout, or fails with its stderr.
pub(crate) fn run(program: &str, args: &[&str]) -> Result<String, Error> {
    let output = std::process::Command::new(program)
        .args(args)
        .output()
        .map_err(Error::io(format!("running {program}")))?;
    if !output.status.success() {
        return Err(Error::Command {
            command: format!("{program} {}", args.join(" ")),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_command_reports_itself_and_its_stderr() {
        assert_eq!(run("sh", &["-c", "echo out"]).unwrap(), "out\n");
        let error = run("sh", &["-c", "echo bad >&2; exit 1"]).unwrap_err();
        assert_eq!(error.to_string(), "sh -c echo bad >&2; exit 1: bad");
    }
}
