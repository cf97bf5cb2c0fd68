//! The CPU the kernels run on, as CPUID tells it on x86-64: its maker and signature (the
//! default store policy depends on them) and a description that benchmark tables carry,
//! so that a table says which machine measured it.

/// Intel's vendor string.
pub const INTEL: &str = "GenuineIntel";

/// AMD's vendor string.
pub const AMD: &str = "AuthenticAMD";

/// The kinds of CPU on which the kernels' defaults were measured to differ: the store
/// policy (`streams_by_default`) and the width from which the 16-bit formats take the f32
/// path (`f32_path::applies`). No output bit depends on the class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// Intel's CPUs other than the Skylake server cores.
    Intel,
    /// Intel's Skylake server cores (family 6, model 85: Skylake-SP, Cascade Lake, Cooper
    /// Lake).
    SkylakeServer,
    /// AMD's family 25: Zen 3 and Zen 4. Of the two only Zen 4 has AVX-512, which it runs
    /// on 256-bit pipes.
    AmdFamily25,
    /// Every other CPU: AMD's other families, other makers, and CPUs that are not x86-64.
    Other,
}

impl Class {
    /// The class of a CPU with this vendor string and signature (family, model, stepping:
    /// [`signature`]); `None` where there is none (off x86-64).
    pub(crate) fn of(vendor: Option<&str>, signature: Option<(u32, u32, u32)>) -> Class {
        match (vendor, signature) {
            (Some(INTEL), Some((6, 85, _))) => Class::SkylakeServer,
            (Some(INTEL), _) => Class::Intel,
            (Some(AMD), Some((25, _, _))) => Class::AmdFamily25,
            _ => Class::Other,
        }
    }

    /// This CPU's class, from CPUID's vendor string and signature.
    pub(crate) fn detect() -> Class {
        Class::of(vendor(), this_signature())
    }
}

/// The text CPUID returns in registers (the vendor and brand strings), in their order.
#[cfg(target_arch = "x86_64")]
fn text_of(registers: &[u32]) -> String {
    let bytes: Vec<u8> = registers.iter().flat_map(|r| r.to_le_bytes()).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// CPUID's vendor string, leaf 0 ("GenuineIntel", "AuthenticAMD", ...); `None` off x86-64.
/// Asked once: under a hypervisor CPUID traps, and costs microseconds.
pub fn vendor() -> Option<&'static str> {
    static VENDOR: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    VENDOR
        .get_or_init(|| {
            #[cfg(target_arch = "x86_64")]
            {
                // SAFETY: CPUID leaf 0 exists on every x86-64 CPU.
                #[allow(unused_unsafe)]
                let id = unsafe { std::arch::x86_64::__cpuid(0) };
                return Some(text_of(&[id.ebx, id.edx, id.ecx]));
            }
            #[allow(unreachable_code)]
            None
        })
        .as_deref()
}

/// Family, model and stepping from CPUID leaf 1's EAX, as the vendors define them: the
/// extended family is added where the family is 15, and the extended model is the model's
/// high nibble where the family is 6 or 15 (Intel) or at least 15 (AMD, whose families
/// 6 and below have none).
pub fn signature(eax: u32, intel: bool) -> (u32, u32, u32) {
    let stepping = eax & 0xf;
    let base_model = (eax >> 4) & 0xf;
    let base_family = (eax >> 8) & 0xf;
    let extended_model = (eax >> 16) & 0xf;
    let extended_family = (eax >> 20) & 0xff;
    let family = if base_family == 0xf {
        base_family + extended_family
    } else {
        base_family
    };
    let extends_model = if intel {
        base_family == 6 || base_family == 0xf
    } else {
        base_family == 0xf
    };
    let model = if extends_model {
        (extended_model << 4) | base_model
    } else {
        base_model
    };
    (family, model, stepping)
}

/// This CPU's family, model and stepping ([`signature`] of CPUID leaf 1); `None` off
/// x86-64. Asked once, as the vendor is.
pub fn this_signature() -> Option<(u32, u32, u32)> {
    static SIGNATURE: std::sync::OnceLock<Option<(u32, u32, u32)>> = std::sync::OnceLock::new();
    *SIGNATURE.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: CPUID leaf 1 exists on every x86-64 CPU.
            #[allow(unused_unsafe)]
            let eax = unsafe { std::arch::x86_64::__cpuid(1).eax };
            return Some(signature(eax, vendor() == Some(INTEL)));
        }
        #[allow(unreachable_code)]
        None
    })
}

/// One line naming this CPU: "GenuineIntel family 6 model 207 stepping 2 (Intel(R)
/// Xeon(R) Processor)" on x86-64 (the brand string where CPUID has one), the architecture's
/// name elsewhere ("aarch64"). The same string on every call.
pub fn describe() -> &'static str {
    static DESCRIPTION: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DESCRIPTION.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::__cpuid;
            let vendor = vendor().unwrap_or("x86_64");
            // SAFETY: leaf 0x8000_0000 exists on every x86-64 CPU; the brand leaves are
            // read only where it says they exist.
            #[allow(unused_unsafe)]
            let highest = unsafe { __cpuid(0x8000_0000).eax };
            let (family, model, stepping) = this_signature().unwrap_or_default();
            let mut text = format!("{vendor} family {family} model {model} stepping {stepping}");
            if highest >= 0x8000_0004 {
                let registers: Vec<u32> = (0x8000_0002..=0x8000_0004u32)
                    .flat_map(|leaf| {
                        // SAFETY: see above.
                        #[allow(unused_unsafe)]
                        let r = unsafe { __cpuid(leaf) };
                        [r.eax, r.ebx, r.ecx, r.edx]
                    })
                    .collect();
                let brand = text_of(&registers);
                let brand = brand.trim_matches(|c: char| c == '\0' || c.is_whitespace());
                if !brand.is_empty() {
                    text.push_str(&format!(" ({brand})"));
                }
            }
            return text;
        }
        #[allow(unreachable_code)]
        std::env::consts::ARCH.to_string()
    })
}

/// The value of the first line of /proc/cpuinfo named `name` (its first processor's), where
/// there is such a file and line: what the kernel says of the CPU, for the tests of what
/// CPUID says.
#[cfg(all(test, target_arch = "x86_64"))]
pub(crate) fn cpuinfo_field(name: &str) -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let line = info
        .lines()
        .find(|l| l.split(':').next().map(str::trim) == Some(name))?;
    Some(line.split_once(':')?.1.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::{describe, signature, Class, AMD, INTEL};

    /// Signatures of known CPUs: the extended model counts on Intel's family 6 and AMD's
    /// families from 15, the extended family where the family is 15.
    #[test]
    fn signatures_decode_as_the_vendors_define_them() {
        // Emerald Rapids (a machine of docs/speed.md's tables): family 6, model 0xCF.
        assert_eq!(signature(0x000c_06f2, true), (6, 207, 2));
        // Zen 4 (Genoa): family 0xF + 0xA = 25, model 0x11.
        assert_eq!(signature(0x00a1_0f11, false), (25, 17, 1));
        // An AMD family below 15 takes no extended model.
        assert_eq!(signature(0x0001_0623, false), (6, 2, 3));
        // Skylake-SP: family 6, model 0x55, stepping 4.
        assert_eq!(signature(0x0005_0654, true), (6, 85, 4));
    }

    #[test]
    fn the_description_is_one_stable_line() {
        let text = describe();
        assert!(!text.is_empty() && !text.contains('\n'), "{text:?}");
        assert!(!text.contains('\0'), "{text:?}");
        assert_eq!(text, describe());
        #[cfg(target_arch = "x86_64")]
        assert!(
            text.contains(" family ") && text.contains(" model "),
            "{text}"
        );
    }

    /// The Skylake server cores are Intel's family 6 model 85, whatever the stepping
    /// (Skylake-SP 4, Cascade Lake 7, Cooper Lake 11); not Emerald Rapids, not another
    /// maker's model 85, not a CPU that is not x86-64. AMD's family 25 (Zen 3: model 1;
    /// Zen 4: 17, 97) is a class of its own, whatever the model; AMD's other families are not.
    #[test]
    fn classes_follow_vendor_family_and_model() {
        use Class::{AmdFamily25, Intel, Other, SkylakeServer};
        let (intel, amd) = (Some(INTEL), Some(AMD));
        for stepping in [4, 7, 11] {
            assert_eq!(Class::of(intel, Some((6, 85, stepping))), SkylakeServer);
        }
        assert_eq!(Class::of(intel, Some((6, 207, 2))), Intel);
        assert_eq!(Class::of(intel, Some((6, 86, 4))), Intel);
        assert_eq!(Class::of(intel, Some((15, 85, 4))), Intel);
        assert_eq!(Class::of(amd, Some((6, 85, 7))), Other);
        for model in [1, 17, 97] {
            assert_eq!(Class::of(amd, Some((25, model, 1))), AmdFamily25);
        }
        assert_eq!(Class::of(amd, Some((26, 17, 0))), Other);
        assert_eq!(Class::of(amd, Some((23, 49, 0))), Other);
        assert_eq!(Class::of(intel, Some((25, 17, 1))), Intel);
        assert_eq!(Class::of(None, Some((25, 17, 1))), Other);
        assert_eq!(Class::of(None, None), Other);
        assert_eq!(Class::of(intel, None), Intel);
        assert_eq!(Class::of(amd, None), Other);
    }

    /// What CPUID says against what /proc/cpuinfo says, on x86-64 only: CPUID exists
    /// nowhere else, and there /proc/cpuinfo may describe another machine (under
    /// qemu-user, as `.ci/aarch64` runs the tests, it is the host's x86-64 CPU).
    #[cfg(target_arch = "x86_64")]
    mod against_cpuinfo {
        use super::super::{cpuinfo_field, this_signature, Class};

        /// This CPU's signature is the one /proc/cpuinfo gives, where there is one.
        #[test]
        fn this_signature_matches_cpuinfo() {
            let number = |name| cpuinfo_field(name).and_then(|v| v.parse::<u32>().ok());
            let (Some(family), Some(model)) = (number("cpu family"), number("model")) else {
                return;
            };
            let (f, m, _) = this_signature().expect("x86-64: /proc/cpuinfo has a cpu family");
            assert_eq!((f, m), (family, model));
        }

        /// The class follows CPUID's vendor string and signature, as /proc/cpuinfo gives them
        /// where there is one.
        #[test]
        fn the_class_matches_cpuinfo() {
            let Some(vendor) = cpuinfo_field("vendor_id") else {
                return;
            };
            let number = |name| cpuinfo_field(name).and_then(|v| v.parse::<u32>().ok());
            // The stepping does not enter the class.
            let signature = number("cpu family")
                .zip(number("model"))
                .map(|(family, model)| (family, model, 0));
            assert_eq!(Class::detect(), Class::of(Some(&vendor), signature));
        }
    }
}
