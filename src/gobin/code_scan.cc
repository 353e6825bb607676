#include "gobin/code_scan.h"

#include <capstone/capstone.h>
#include <elf.h>

#include <memory>
#include <string_view>

#include "base/error.h"
#include "gobin/capstone_library.h"

namespace goheap2pprof {

namespace {

// Owns a Capstone handle (closed on destruction), and the library it is of.
class CapstoneHandle {
 public:
  CapstoneHandle(cs_arch arch, cs_mode mode) : cs_(Capstone()) {
    if (cs_err err = cs_.open(arch, mode, &handle_); err != CS_ERR_OK) {
      throw Error(ErrorKind::kInternal, "Capstone cs_open failed: ", cs_.strerror(err));
    }
    open_ = true;
    if (cs_err err = cs_.option(handle_, CS_OPT_DETAIL, CS_OPT_ON); err != CS_ERR_OK) {
      throw Error(ErrorKind::kInternal,
                  "Capstone cannot enable instruction details: ", cs_.strerror(err));
    }
  }
  ~CapstoneHandle() {
    if (open_) cs_.close(&handle_);
  }
  CapstoneHandle(const CapstoneHandle&) = delete;
  CapstoneHandle& operator=(const CapstoneHandle&) = delete;

  csh get() const { return handle_; }
  // The next instruction at *code into insn (cs_disasm_iter).
  bool Next(const uint8_t** code, size_t* size, uint64_t* address, cs_insn* insn) const {
    return cs_.disasm_iter(handle_, code, size, address, insn);
  }
  const char* RegName(unsigned int reg) const { return cs_.reg_name(handle_, reg); }
  const CapstoneLibrary& library() const { return cs_; }

 private:
  const CapstoneLibrary& cs_;
  csh handle_ = 0;
  bool open_ = false;
};

// One instruction buffer for Next (freed on destruction).
struct InsnFree {
  void (*free)(cs_insn* insn, size_t count);
  void operator()(cs_insn* insn) const { free(insn, 1); }
};
using InsnPtr = std::unique_ptr<cs_insn, InsnFree>;

InsnPtr AllocInsn(const CapstoneHandle& cs) {
  InsnPtr insn(cs.library().malloc(cs.get()), InsnFree{cs.library().free});
  if (!insn) throw Error(ErrorKind::kInternal, "Capstone cs_malloc failed");
  return insn;
}

void ScanAmd64(Bytes code, uint64_t vaddr, size_t max_insns, std::vector<DataRef>& out) {
  CapstoneHandle cs(CS_ARCH_X86, CS_MODE_64);
  InsnPtr insn = AllocInsn(cs);
  const uint8_t* p = code.data();
  size_t left = code.size();
  uint64_t addr = vaddr;
  for (size_t n = 0; n < max_insns && left > 0; ++n) {
    if (!cs.Next(&p, &left, &addr, insn.get())) {
      // Not an instruction (e.g. padding Capstone does not know): skip a byte.
      ++p;
      --left;
      ++addr;
      continue;
    }
    const cs_x86& x86 = insn->detail->x86;
    const bool lea = insn->id == X86_INS_LEA;
    for (uint8_t i = 0; i < x86.op_count && i < 8; ++i) {
      const cs_x86_op& op = x86.operands[i];
      if (op.type != X86_OP_MEM || op.mem.base != X86_REG_RIP || op.mem.index != X86_REG_INVALID) {
        continue;
      }
      DataRef ref;
      ref.insn_addr = insn->address;
      ref.target = insn->address + insn->size + static_cast<uint64_t>(op.mem.disp);
      ref.size = lea ? 0 : op.size;
      ref.write = !lea && (op.access & CS_AC_WRITE) != 0;
      out.push_back(ref);
    }
  }
}

// Bytes moved by an arm64 load/store, from its mnemonic and first register.
uint8_t Arm64AccessSize(std::string_view mnemonic, std::string_view reg_name) {
  const bool pair = mnemonic.starts_with("ldp") || mnemonic.starts_with("stp") ||
                    mnemonic.starts_with("ldnp") || mnemonic.starts_with("stnp");
  uint8_t size = 0;
  if (mnemonic.ends_with("sw")) {
    size = 4;
  } else if (mnemonic.ends_with("b")) {
    size = 1;
  } else if (mnemonic.ends_with("h")) {
    size = 2;
  } else if (!reg_name.empty()) {
    switch (reg_name[0]) {
      case 'w':
      case 's':
        size = 4;
        break;
      case 'x':
      case 'd':
        size = 8;
        break;
      case 'q':
        size = 16;
        break;
      default:
        size = 0;
    }
  }
  return pair ? static_cast<uint8_t>(size * 2) : size;
}

// An access through the register an ADRP+ADD pair (the last ref in `out`)
// left the variable's address in: it gives that ref its size and direction,
// or, at a displacement, adds a ref to a field of the variable.
void AddAccessThroughAdd(const cs_insn& insn, arm64_reg add_reg, std::string_view reg_name,
                         std::vector<DataRef>& out) {
  const cs_arm64& a = insn.detail->arm64;
  const std::string_view mnemonic(insn.mnemonic);
  for (uint8_t i = 0; i < a.op_count && i < 8; ++i) {
    const cs_arm64_op& op = a.operands[i];
    if (op.type == ARM64_OP_MEM && op.mem.base == add_reg && op.mem.index == ARM64_REG_INVALID) {
      DataRef access = out.back();
      access.size = Arm64AccessSize(mnemonic, reg_name);
      access.write = mnemonic.starts_with("st") || mnemonic.starts_with("cas") ||
                     mnemonic.starts_with("swp") || mnemonic.starts_with("ldadd");
      if (op.mem.disp == 0) {
        out.back() = access;  // the address-taking ADD was for this access
      } else {
        // A field of the variable (e.g. a string's length at +8).
        access.insn_addr = insn.address;
        access.target += static_cast<uint64_t>(static_cast<int64_t>(op.mem.disp));
        out.push_back(access);
      }
      return;
    }
  }
}

// A load or store at an offset from the page the previous ADRP put in
// `adrp_reg`: a ref to page + offset.
void AddAccessThroughAdrp(const cs_insn& insn, arm64_reg adrp_reg, uint64_t adrp_page,
                          std::string_view reg_name, std::vector<DataRef>& out) {
  const cs_arm64& a = insn.detail->arm64;
  const std::string_view mnemonic(insn.mnemonic);
  for (uint8_t i = 0; i < a.op_count && i < 8; ++i) {
    const cs_arm64_op& op = a.operands[i];
    if (op.type != ARM64_OP_MEM || op.mem.base != adrp_reg || op.mem.index != ARM64_REG_INVALID) {
      continue;
    }
    DataRef ref;
    ref.insn_addr = insn.address;
    ref.target = adrp_page + static_cast<uint64_t>(static_cast<int64_t>(op.mem.disp));
    ref.size = Arm64AccessSize(mnemonic, reg_name);
    ref.write = mnemonic.starts_with("st");
    out.push_back(ref);
    return;
  }
}

void ScanArm64(Bytes code, uint64_t vaddr, size_t max_insns, std::vector<DataRef>& out) {
  CapstoneHandle cs(CS_ARCH_ARM64, CS_MODE_ARM);
  InsnPtr insn = AllocInsn(cs);
  const uint8_t* p = code.data();
  size_t left = code.size();
  uint64_t addr = vaddr;
  // The ADRP of the previous instruction: its destination and page.
  arm64_reg adrp_reg = ARM64_REG_INVALID;
  uint64_t adrp_page = 0;
  // The destination of a previous ADRP+ADD pair: atomics (LDAR, STLR, CAS,
  // ...) and older compilers access the variable (or a field of it) through
  // it in the next instruction, which tells the access size.
  arm64_reg add_reg = ARM64_REG_INVALID;
  for (size_t n = 0; n < max_insns && left >= 4; ++n) {
    if (!cs.Next(&p, &left, &addr, insn.get())) {
      p += 4;
      left -= 4;
      addr += 4;
      adrp_reg = ARM64_REG_INVALID;
      continue;
    }
    const cs_arm64& a = insn->detail->arm64;
    const arm64_reg prev_reg = adrp_reg;
    const arm64_reg prev_add = add_reg;
    adrp_reg = ARM64_REG_INVALID;
    add_reg = ARM64_REG_INVALID;
    const char* reg_name = a.op_count > 0 && a.operands[0].type == ARM64_OP_REG
                               ? cs.RegName(a.operands[0].reg)
                               : nullptr;
    if (prev_add != ARM64_REG_INVALID && !out.empty()) {
      AddAccessThroughAdd(*insn, prev_add, reg_name ? reg_name : "", out);
    }
    if (insn->id == ARM64_INS_ADRP && a.op_count == 2 && a.operands[0].type == ARM64_OP_REG &&
        a.operands[1].type == ARM64_OP_IMM) {
      adrp_reg = a.operands[0].reg;
      adrp_page = static_cast<uint64_t>(a.operands[1].imm);
      continue;
    }
    if (prev_reg == ARM64_REG_INVALID) continue;
    if (insn->id == ARM64_INS_ADD && a.op_count == 3 && a.operands[1].type == ARM64_OP_REG &&
        a.operands[1].reg == prev_reg && a.operands[2].type == ARM64_OP_IMM) {
      uint64_t lo = static_cast<uint64_t>(a.operands[2].imm);
      if (a.operands[2].shift.type == ARM64_SFT_LSL && a.operands[2].shift.value < 64) {
        lo <<= a.operands[2].shift.value;
      }
      out.push_back({insn->address, adrp_page + lo, 0, false});
      if (a.operands[0].type == ARM64_OP_REG) add_reg = a.operands[0].reg;
      continue;
    }
    AddAccessThroughAdrp(*insn, prev_reg, adrp_page, reg_name ? reg_name : "", out);
  }
}

}  // namespace

std::vector<DataRef> ScanDataRefs(uint16_t machine, Bytes code, uint64_t vaddr, size_t max_insns) {
  std::vector<DataRef> refs;
  switch (machine) {
    case EM_X86_64:
      ScanAmd64(code, vaddr, max_insns, refs);
      break;
    case EM_AARCH64:
      ScanArm64(code, vaddr, max_insns, refs);
      break;
    default:
      throw Error(ErrorKind::kUnsupported, "machine code of ELF machine ", machine,
                  " cannot be decoded; only amd64 and arm64 are supported");
  }
  return refs;
}

}  // namespace goheap2pprof
