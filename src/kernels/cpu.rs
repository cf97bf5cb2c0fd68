//! The CPU the kernels run on, as CPUID tells it on x86-64: its maker (the default store
//! policy depends on it) and a description that benchmark tables carry, so that a table
//! says which machine measured it.

/// Intel's vendor string.
pub const INTEL: &str = "GenuineIntel";

/// The text CPUID returns in registers (the vendor and brand strings), in their order.
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
            // SAFETY: leaves 1 and 0x8000_0000 exist on every x86-64 CPU; the brand leaves
            // are read only where 0x8000_0000 says they exist.
            #[allow(unused_unsafe)]
            let (leaf1, highest) = unsafe { (__cpuid(1).eax, __cpuid(0x8000_0000).eax) };
            let (family, model, stepping) = signature(leaf1, vendor == INTEL);
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

#[cfg(test)]
mod tests {
    use super::{describe, signature};

    /// Signatures of known CPUs: the extended model counts on Intel's family 6 and AMD's
    /// families from 15, the extended family where the family is 15.
    #[test]
    fn signatures_decode_as_the_vendors_define_them() {
        // Emerald Rapids (the machine of the README's tables): family 6, model 0xCF.
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
}
