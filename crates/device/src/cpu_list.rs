//! CPU lists in the kernel's format (`0-3,6,8-9`): [`parse_cpu_list`] and [`format_cpu_list`],
//! the one parser of the kernel's files (blk-mq's `cpu_list`, `devices/system/cpu/online`, IRQ
//! affinities) and of the CPU sets a user gives.

/// Largest CPU number a CPU list may name. Far above any real machine, and it keeps a range
/// such as `0-4000000000` from allocating a huge list.
pub const MAX_CPU: usize = 65_535;

const CPUS_ACCEPTED: &str = "use CPU numbers and ranges separated by commas, e.g. 0-3,6,8-9";

/// Why a CPU list could not be parsed. Reads as a sentence after the name of the setting or
/// file it came from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CpuListError {
    /// Nothing was given.
    #[error("empty CPU list; give e.g. 0-3,6")]
    Empty,
    /// The text is not a CPU list.
    #[error("'{input}' is not a valid CPU list: {reason}")]
    Invalid {
        /// The text as given.
        input: String,
        /// Why not, and what would be accepted.
        reason: String,
    },
}

/// Parses a CPU list in the kernel's format (`0-3,6,8-9` as in `/sys/devices/system/cpu/online`
/// and `taskset -c`; `0, 1` as blk-mq's `cpu_list` writes it). Returns the CPUs sorted, each
/// once. CPUs above [`MAX_CPU`] and reversed ranges (`5-2`) are errors.
pub fn parse_cpu_list(input: &str) -> Result<Vec<usize>, CpuListError> {
    let invalid = |reason: String| CpuListError::Invalid {
        input: input.to_string(),
        reason,
    };
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Err(CpuListError::Empty);
    }
    let cpu = |part: &str| -> Result<usize, CpuListError> {
        let part = part.trim();
        if part.is_empty() {
            return Err(invalid(format!("a CPU number is missing; {CPUS_ACCEPTED}")));
        }
        if part.starts_with('-') {
            return Err(invalid("negative CPU number".into()));
        }
        if !part.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid(format!(
                "'{part}' is not a CPU number; {CPUS_ACCEPTED}"
            )));
        }
        match part.parse::<usize>() {
            Ok(n) if n <= MAX_CPU => Ok(n),
            _ => Err(invalid(format!(
                "CPU {part} is beyond the largest possible CPU number {MAX_CPU}"
            ))),
        }
    };
    let mut cpus = Vec::new();
    for item in trimmed.split(',') {
        // A '-' after the first character separates a range; a leading one is a sign.
        match item.trim().get(1..).and_then(|rest| rest.find('-')) {
            Some(dash) => {
                let item = item.trim();
                let (first, last) = (cpu(&item[..dash + 1])?, cpu(&item[dash + 2..])?);
                if first > last {
                    return Err(invalid(format!(
                        "range {first}-{last} runs backwards; write {last}-{first}"
                    )));
                }
                cpus.extend(first..=last);
            }
            None => cpus.push(cpu(item)?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Formats CPUs in the kernel's list format, merging runs into ranges (`[0,1,2,5]` -> `0-2,5`).
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            end += 1;
            i += 1;
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kernel_cpu_lists() {
        // blk-mq's form and a file's trailing newline.
        assert_eq!(parse_cpu_list("0, 1"), Ok(vec![0, 1]));
        assert_eq!(parse_cpu_list("0-3,6\n"), Ok(vec![0, 1, 2, 3, 6]));
        assert_eq!(parse_cpu_list("0"), Ok(vec![0]));
        assert_eq!(parse_cpu_list("0-3,6,8-9"), Ok(vec![0, 1, 2, 3, 6, 8, 9]));
        assert_eq!(parse_cpu_list("3,1,2,1"), Ok(vec![1, 2, 3]));
        assert_eq!(parse_cpu_list(" 0 - 1 , 5 "), Ok(vec![0, 1, 5]));
        assert_eq!(parse_cpu_list("4-4"), Ok(vec![4]));
        assert_eq!(parse_cpu_list("65535"), Ok(vec![65535]));
        for bad in [
            "",
            "1-",
            "-1",
            "a",
            "1,,2",
            "1,",
            ",1",
            "3-1",
            "1-2-3",
            "0x1",
            "1.5",
            "65536",
            "0-4000000000",
            "99999999999999999999999",
            "1 2",
            "--1",
            "1--2",
            "-",
        ] {
            let err = parse_cpu_list(bad).expect_err(bad);
            assert!(!err.to_string().contains('\n'));
        }
        assert_eq!(parse_cpu_list(" "), Err(CpuListError::Empty));
        assert!(parse_cpu_list("3-1")
            .unwrap_err()
            .to_string()
            .contains("1-3"));
        assert!(parse_cpu_list("x").unwrap_err().to_string().contains("'x'"));
    }

    #[test]
    fn cpu_lists_round_trip_through_formatting() {
        assert_eq!(format_cpu_list(&[5, 0, 1, 2]), "0-2,5");
        // Every subset of CPUs 0-11: runs, gaps and single CPUs in every arrangement.
        for mask in 1u32..(1 << 12) {
            let cpus: Vec<usize> = (0..12).filter(|c| mask & (1 << c) != 0).collect();
            let text = format_cpu_list(&cpus);
            assert_eq!(parse_cpu_list(&text), Ok(cpus), "{text}");
        }
    }
}
