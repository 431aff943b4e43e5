//! Components made for tests with `wasm-encoder`: as much code as asked
//! for, exporting and importing whatever names are asked for (their types
//! empty instances: a component that passes the node's cheap checks but
//! not the type check after compiling, or one that fails them).
//!
//! Shared by `wray-host`'s unit tests (`executor/compile/tests.rs`) and
//! its integration tests.

#![allow(dead_code)]

use wasm_encoder::{
    CodeSection, Component, ComponentExportKind, ComponentExportSection, ComponentImportSection,
    ComponentInstanceSection, ComponentTypeRef, ComponentTypeSection, Function, FunctionSection,
    InstanceType, Instruction, Module, ModuleSection, TypeSection, ValType,
};

/// Bytes of code in one function (well under wasmparser's 7.6 MB bound on a
/// function body).
const FUNCTION_BYTES: usize = 64 << 10;

/// A core module with about `code_bytes` of code: functions of 64 KiB, each
/// a long chain of arithmetic on a local (what keeps Cranelift busy).
pub fn module(code_bytes: usize) -> Module {
    let mut types = TypeSection::new();
    types.ty().function([ValType::I32], [ValType::I32]);
    let mut functions = FunctionSection::new();
    let mut code = CodeSection::new();
    let count = code_bytes.div_ceil(FUNCTION_BYTES);
    for n in 0..count {
        functions.function(0);
        let mut f = Function::new([]);
        // local.get 0, i32.const n (below 64), i32.add / i32.mul,
        // local.set 0: 7 bytes each.
        for i in 0..FUNCTION_BYTES / 7 {
            f.instruction(&Instruction::LocalGet(0));
            f.instruction(&Instruction::I32Const((n + i) as i32 & 0x3f));
            f.instruction(if i % 2 == 0 {
                &Instruction::I32Add
            } else {
                &Instruction::I32Mul
            });
            f.instruction(&Instruction::LocalSet(0));
        }
        f.instruction(&Instruction::LocalGet(0));
        f.instruction(&Instruction::End);
        code.function(&f);
    }
    let mut module = Module::new();
    module.section(&types);
    module.section(&functions);
    module.section(&code);
    module
}

/// A component holding [`module`]`(code_bytes)` (never instantiated),
/// importing an (empty) instance under each of `imports` and exporting an
/// empty instance under each of `exports`.
pub fn component(code_bytes: usize, imports: &[&str], exports: &[&str]) -> Vec<u8> {
    let mut component = Component::new();
    component.section(&ModuleSection(&module(code_bytes)));
    if !imports.is_empty() {
        let mut types = ComponentTypeSection::new();
        types.instance(&InstanceType::new());
        component.section(&types);
        let mut section = ComponentImportSection::new();
        for name in imports {
            section.import(*name, ComponentTypeRef::Instance(0));
        }
        component.section(&section);
    }
    if !exports.is_empty() {
        let mut instances = ComponentInstanceSection::new();
        for _ in exports {
            instances.export_items(Vec::<(&str, ComponentExportKind, u32)>::new());
        }
        component.section(&instances);
        let mut section = ComponentExportSection::new();
        let first = imports.len() as u32;
        for (i, name) in exports.iter().enumerate() {
            section.export(*name, ComponentExportKind::Instance, first + i as u32, None);
        }
        component.section(&section);
    }
    component.finish()
}

/// The interface names of the wray parts, as components export them.
pub const FUNCTIONS: &str = "wray:runtime/functions@0.1.0";
/// See [`FUNCTIONS`].
pub const METADATA: &str = "wray:runtime/metadata@0.1.0";
/// See [`FUNCTIONS`].
pub const DRIVER: &str = "wray:runtime/driver@0.1.0";

/// `bytes` (a component) with a custom section of its own appended (named
/// `wray-test`, holding `n`): other bytes, so another digest and another
/// version when deployed, of the same component.
pub fn variant(bytes: &[u8], n: u8) -> Vec<u8> {
    const NAME: &[u8] = b"wray-test";
    // Section id 0 (custom), its size, the name's length and bytes, then
    // the payload: every length under 128, one LEB128 byte each.
    let mut out = bytes.to_vec();
    out.extend_from_slice(&[0, (NAME.len() + 2) as u8, NAME.len() as u8]);
    out.extend_from_slice(NAME);
    out.push(n);
    out
}
