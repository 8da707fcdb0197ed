//! What the pipeline is asked to do beyond the IR: the `-O` level and the
//! code generation settings clang would apply. The driver fills them from
//! the command line (`driver::plan`); the pipeline only reads them.

/// The `-O` level and its pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum OptLevel {
    O0,
    O1,
    O2,
    O3,
    Os,
    Oz,
}

impl OptLevel {
    /// Parses the value of `-O` as clang does; `None` for values clang
    /// rejects (then clang reports them).
    pub fn parse(value: &str) -> Option<OptLevel> {
        Some(match value {
            "" | "1" | "g" => OptLevel::O1,
            "0" => OptLevel::O0,
            "2" => OptLevel::O2,
            "3" | "fast" => OptLevel::O3,
            "s" => OptLevel::Os,
            "z" => OptLevel::Oz,
            n if n.chars().all(|c| c.is_ascii_digit()) => OptLevel::O3,
            _ => return None,
        })
    }

    /// The new pass manager's pipeline for this level.
    pub fn pipeline(self) -> &'static str {
        match self {
            OptLevel::O0 => "default<O0>",
            OptLevel::O1 => "default<O1>",
            OptLevel::O2 => "default<O2>",
            OptLevel::O3 => "default<O3>",
            OptLevel::Os => "default<Os>",
            OptLevel::Oz => "default<Oz>",
        }
    }

    /// clang's `CodeGenOpts.OptimizationLevel` (Os/Oz count as 2).
    pub fn numeric(self) -> u8 {
        match self {
            OptLevel::O0 => 0,
            OptLevel::O1 => 1,
            OptLevel::O2 | OptLevel::Os | OptLevel::Oz => 2,
            OptLevel::O3 => 3,
        }
    }
}

/// Code model from `-mcmodel=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum CodeModelSetting {
    Default,
    Small,
    Kernel,
    Medium,
    Large,
}

/// What clang would set on its TargetMachine and pass builder that the IR
/// does not carry (CPU, features, relocation model and debug info are read
/// from the module itself).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CodegenSettings {
    pub opt: OptLevel,
    pub function_sections: bool,
    pub data_sections: bool,
    pub unique_section_names: bool,
    pub addrsig: bool,
    pub use_init_array: bool,
    pub vectorize_loops: bool,
    pub vectorize_slp: bool,
    pub unroll_loops: bool,
    pub code_model: CodeModelSetting,
    /// What is larger than this many bytes goes in the large data
    /// sections (`.ldata`, `.lbss`, `.lrodata`): clang's default for the
    /// medium code model on x86-64 is 65536, for the others 0 (the large
    /// model puts everything there, the small ones nothing).
    pub large_data_threshold: u64,
    pub debug_info: bool,
}

#[cfg(test)]
impl CodegenSettings {
    /// What clang sets for a plain `-O2` (tests and measurements).
    pub fn plain_o2() -> CodegenSettings {
        CodegenSettings {
            opt: OptLevel::O2,
            function_sections: false,
            data_sections: false,
            unique_section_names: true,
            addrsig: true,
            use_init_array: true,
            vectorize_loops: true,
            vectorize_slp: true,
            unroll_loops: true,
            code_model: CodeModelSetting::Default,
            large_data_threshold: 0,
            debug_info: false,
        }
    }
}
