# ruff: noqa: E501  (the catalog rows are kept one per line, as NVIDIA lists them)
"""NVIDIA's Xid catalog: what each Xid in a kernel log means and what it asks of the operator.

Source: NVIDIA, "Analyzing Xid Errors with the Xid Catalog",
https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html (the catalog of Ampere and
newer GPUs, rows up to Xid 172, driver R575/R580 era; read 2026-12 from the stored copy of that
page). Each row: Xid -> (mnemonic, description, "Resolution Bucket (Immediate Action)") exactly
as the catalog prints them. Rows whose description is "Unused" are left out: such an Xid is
reported as "not in the catalog for current GPUs".

gpudash's severity is derived from the immediate action, once, here (`severity_of`):
RESTART_BM, RESET_GPU, RESTART_VM, CHECK_MECHANICALS, UPDATE_SWFW and the DBE/NVLink
workflows mean the GPU is not fit to serve until someone acts: "fail". The NVLink5 workflow
(Xids 144-150, Blackwell) depends on the decoded message: the catalog's decode table gives
RESET_GPU to its Fatal rows and IGNORE/CONTACT_SUPPORT to its Non-fatal ones, and the message
itself says "Fatal" or "Nonfatal", so the word decides. Xid 154 carries the recovery action in
its text ("... to 0x2 (Node Reboot Required)"). RESTART_APP / CHECK_APP and the Xid 13/31/45
workflows are application faults that leave the GPU healthy: "info", except Xid 94 (contained
memory error: "reset the GPU when convenient", same page): "warn". IGNORE: "info".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CATALOG_URL = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"


@dataclass(frozen=True)
class XidInfo:
    xid: int
    mnemonic: str
    description: str
    action: str  # the catalog's immediate action ("" where the catalog gives none)


# (xid, mnemonic, description, immediate action) from CATALOG_URL, "Xids" sheet.
_ROWS: tuple[tuple[int, str, str, str], ...] = (
    (8, "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "GPU stopped processing", "RESTART_APP"),
    (11, "ROBUST_CHANNEL_GR_ERROR_MISSING_HW", "Invalid or corrupted push buffer stream", "RESTART_APP"),
    (13, "ROBUST_CHANNEL_GR_EXCEPTION", "Graphics Engine Exception", "RESTART_APP"),
    (14, "ROBUST_CHANNEL_FAKE_ERROR", "Fake or injected error from userspace", "IGNORE"),
    (25, "ROBUST_CHANNEL_GR_ILLEGAL_NOTIFY", "Invalid or illegal push buffer stream", "RESTART_APP"),
    (31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "GPU memory page fault", "RESTART_APP"),
    (32, "ROBUST_CHANNEL_PBDMA_ERROR", "Invalid or corrupted push buffer stream", "RESTART_APP"),
    (37, "ROBUST_CHANNEL_FECS_ERR_UNIMP_FIRMWARE_METHOD", "Driver firmware error", "IGNORE"),
    (38, "ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT", "Driver firmware error", "IGNORE"),
    (39, "ROBUST_CHANNEL_CE0_ERROR", "Copy Engine Exception", "RESTART_APP"),
    (40, "ROBUST_CHANNEL_CE1_ERROR", "Copy Engine Exception", "RESTART_APP"),
    (41, "ROBUST_CHANNEL_CE2_ERROR", "Copy Engine Exception", "RESTART_APP"),
    (43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "GPU stopped processing", "IGNORE"),
    (44, "ROBUST_CHANNEL_GR_FAULT_DURING_CTXSW", "Graphics Engine fault during context switch", "IGNORE"),
    (45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "Preemptive cleanup, due to previous errors", "WORKFLOW_XID_45"),
    (46, "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", "GPU stopped processing", "RESET_GPU"),
    (48, "ROBUST_CHANNEL_GPU_ECC_DBE", "Double Bit ECC Error", "WORKFLOW_XID_48"),
    (54, "SILENT_RUNNING_PWR_REDUCED_CLOCKING", "Auxiliary power is not connected to the GPU board", "CHECK_MECHANICALS"),
    (60, "ROBUST_CHANNEL_SEC2_ERROR", "Video processor exception", "RESTART_APP"),
    (62, "PMU_HALT_ERROR", "Internal micro-controller halt", "RESET_GPU"),
    (63, "INFOROM_DRAM_RETIREMENT_EVENT", "GPU memory remapping event", "IGNORE"),
    (64, "INFOROM_DRAM_RETIREMENT_FAILURE", "GPU memory remapping failure", "RESET_GPU"),
    (66, "ROBUST_CHANNEL_FECS_ERR_REG_ACCESS_VIOLATION", "Illegal access by driver", "IGNORE"),
    (67, "ROBUST_CHANNEL_FECS_ERR_VERIF_VIOLATION", "Illegal access by driver", "IGNORE"),
    (68, "ROBUST_CHANNEL_NVDEC0_ERROR", "NVDEC0 Exception", "RESTART_APP"),
    (69, "ROBUST_CHANNEL_GR_CLASS_ERROR", "Graphics Engine class error", "RESTART_APP"),
    (70, "ROBUST_CHANNEL_CE3_ERROR", "CE3: Unknown Error", "RESTART_APP"),
    (71, "ROBUST_CHANNEL_CE4_ERROR", "CE4: Unknown Error", "RESTART_APP"),
    (72, "ROBUST_CHANNEL_CE5_ERROR", "CE5: Unknown Error", "RESTART_APP"),
    (74, "NVLINK_ERROR", "NVLINK Error", "WORKFLOW_NVLINK_ERR"),
    (75, "ROBUST_CHANNEL_CE6_ERROR", "CE6: Unknown Error", "RESTART_APP"),
    (76, "ROBUST_CHANNEL_CE7_ERROR", "CE7: Unknown Error", "RESTART_APP"),
    (77, "ROBUST_CHANNEL_CE8_ERROR", "CE8: Unknown Error", "RESTART_APP"),
    (78, "VGPU_START_ERROR", "vGPU Start Error", "UPDATE_SWFW"),
    (79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus", "RESTART_BM"),
    (80, "PBDMA_PUSHBUFFER_CRC_MISMATCH", "Corrupted data sent to GPU", "RESTART_APP"),
    (82, "ROBUST_CHANNEL_NVJPG0_ERROR", "NVJPG0 Error", "RESTART_APP"),
    (83, "ROBUST_CHANNEL_NVDEC1_ERROR", "NVDEC1 Error", "RESTART_APP"),
    (84, "ROBUST_CHANNEL_NVDEC2_ERROR", "NVDEC2 Error", "RESTART_APP"),
    (85, "ROBUST_CHANNEL_CE9_ERROR", "CE9: Unknown Error", "RESTART_APP"),
    (86, "ROBUST_CHANNEL_OFA0_ERROR", "OFA Exception", "RESTART_APP"),
    (88, "ROBUST_CHANNEL_NVDEC3_ERROR", "NVDEC3 Error", "RESTART_APP"),
    (89, "ROBUST_CHANNEL_NVDEC4_ERROR", "NVDEC4 Error", "RESTART_APP"),
    (92, "EXCESSIVE_SBE_INTERRUPTS", "High single-bit ECC error rate", "IGNORE"),
    (93, "INFOROM_ERASE_LIMIT_EXCEEDED", "Non-fatal violation of provisioned InfoROM wear limit", "IGNORE"),
    (94, "ROBUST_CHANNEL_CONTAINED_ERROR", "Contained memory error", "RESTART_APP"),
    (95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "Uncontained memory error", "RESET_GPU"),
    *(
        (n, f"ROBUST_CHANNEL_{unit}_ERROR", f"{unit} Error", "RESTART_APP")
        for n, unit in (
            (96, "NVDEC5"), (97, "NVDEC6"), (98, "NVDEC7"), (99, "NVJPG1"), (100, "NVJPG2"),
            (101, "NVJPG3"), (102, "NVJPG4"), (103, "NVJPG5"), (104, "NVJPG6"), (105, "NVJPG7"),
        )
    ),
    (106, "SMBPBI_TEST_MESSAGE", "SMBPBI Test Message", "IGNORE"),
    (107, "SMBPBI_TEST_MESSAGE_SILENT", "SMBPBI Test Message Silent", "IGNORE"),
    (109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "Context Switch Timeout Error", "RESET_GPU"),
    (110, "SEC_FAULT_ERROR", "Security Fault Error", "RESET_GPU"),
    (119, "GSP_RPC_TIMEOUT", "GSP RPC Timeout", "RESET_GPU"),
    (120, "GSP_ERROR", "GSP Error", "RESET_GPU"),
    (121, "C2C_ERROR", "C2C Error", "IGNORE"),
    *(
        (n, f"ROBUST_CHANNEL_CE{n - 116}_ERROR", f"CE{n - 116}: Unknown Error", "RESTART_APP")
        for n in range(126, 136)
    ),
    (136, "ALI_TRAINING_FAIL", "Link Training Failed", "RESET_GPU"),
    (137, "NVLINK_PRIV_ERR", "NVLink Privilege Error", "IGNORE"),
    (139, "ROBUST_CHANNEL_OFA1_ERROR", "OFA1 Error", "RESTART_APP"),
    (140, "UNRECOVERABLE_ECC_ERROR_ESCAPE", "ECC Unrecovered Error", "RESET_GPU"),
    (141, "ROBUST_CHANNEL_FAST_PATH_ERROR", "CUDA Fast Path Error", "IGNORE"),
    (142, "ROBUST_CHANNEL_NVENC3_ERROR", "NVENC3 Error", "CONTACT_SUPPORT"),
    (143, "GPU_INIT_ERROR", "GPU Initialization Error", "RESET_GPU"),
    (144, "NVLINK_SAW_ERROR", "NVLINK: SAW Error", "WORKFLOW_NVLINK5_ERR"),
    (145, "NVLINK_RLW_ERROR", "NVLINK: RLW Error", "WORKFLOW_NVLINK5_ERR"),
    (146, "NVLINK_TLW_ERROR", "NVLINK: TLW Error", "WORKFLOW_NVLINK5_ERR"),
    (147, "NVLINK_TREX_ERROR", "NVLINK: TREX Error", "WORKFLOW_NVLINK5_ERR"),
    (148, "NVLINK_NVLPW_CTRL_ERROR", "NVLINK: NVLPW_CTRL Error", "WORKFLOW_NVLINK5_ERR"),
    (149, "NVLINK_NETIR_ERROR", "NVLINK: NETIR Error", "WORKFLOW_NVLINK5_ERR"),
    (150, "NVLINK_MSE_ERROR", "NVLINK: MSE Error", "WORKFLOW_NVLINK5_ERR"),
    (151, "ROBUST_CHANNEL_KEY_ROTATION_ERROR", "Key rotation Error", "RESTART_VM"),
    (152, "ROBUST_CHANNEL_DLA_SMMU_ERROR", "DLA SMMU Error", "IGNORE"),
    (153, "ROBUST_CHANNEL_DLA_TIMEOUT", "DLA timeout Error", "IGNORE"),
    (154, "GPU_RECOVERY_ACTION_CHANGED", "GPU Recovery Action Changed", "XID_154"),
    (155, "NVLINK_SW_DEFINED_ERROR", "NVLINK: SW Defined Error", "RESET_GPU"),
    (156, "RESOURCE_RETIREMENT_EVENT", "Resource Retirement Event", "RESET_GPU"),
    (157, "RESOURCE_RETIREMENT_FAILURE", "Resource Retirement Failure", "IGNORE"),
    (158, "GPU_FATAL_TIMEOUT", "GPU Fatal Timeout", "RESET_GPU"),
    (159, "ROBUST_CHANNEL_CHI_NON_DATA_ERROR", "CHI Non-Data Error", "CHECK_UVM"),
    (160, "CHANNEL_RETIREMENT_EVENT", "Channel Retirement Event", "IGNORE"),
    (161, "CHANNEL_RETIREMENT_FAILURE", "Channel Retirement Failure", "IGNORE"),
    # 162-172: the catalog gives trigger notes but no immediate-action bucket.
    (162, "PSHC_REENGAGED", "Power Smoothing HW Circuitry capability reengaged", ""),
    (163, "PSHC_DISENGAGED", "Power Smoothing HW Circuitry capability disengaged", ""),
    (164, "PSHC_LOW_LIFETIME", "Power Smoothing HW Circuitry low lifetime reached", ""),
    (165, "PSHC_ZERO_LIFETIME", "Power Smoothing HW Circuitry lifetime exhausted", ""),
    (166, "NVLINK_SECURE_CRYPTO_ERR", "CC traffic seen before the link was configured for encryption", ""),
    (167, "PCIE_FATAL_TIMEOUT", "PCIE_FATAL_TIMEOUT", ""),
    (168, "REDUCED_GPU_MEMORY_CAPACITY", "Errors found in WPR (write protected region)", ""),
    (169, "SEC2_HALT_ERROR", "Internal micro-controller halt", ""),
    (170, "NVLINK_SECURE_OTHER", "Interrupt seen in CC mode", ""),
    (171, "UNCORRECTABLE_DRAM_ERROR", "Details of an Xid 48 (DRAM)", ""),
    (172, "UNCORRECTABLE_SRAM_ERROR", "Details of an Xid 48 (SRAM)", ""),
)  # fmt: skip

CATALOG: dict[int, XidInfo] = {row[0]: XidInfo(*row) for row in _ROWS}

_FAIL_ACTIONS = frozenset(
    {"RESTART_BM", "RESET_GPU", "RESTART_VM", "CHECK_MECHANICALS", "UPDATE_SWFW",
     "WORKFLOW_XID_48", "WORKFLOW_NVLINK_ERR"}
)  # fmt: skip
_INFO_ACTIONS = frozenset(
    {"IGNORE", "RESTART_APP", "WORKFLOW_XID_45", "CHECK_UVM", "CONTACT_SUPPORT"}
)
_RECOVERY = re.compile(r"to\s+0x[0-9a-fA-F]+\s*\(([^)]*)\)")
_NONFATAL = re.compile(r"\bnon-?fatal\b", re.IGNORECASE)
_FATAL = re.compile(r"\bfatal\b", re.IGNORECASE)

# What each fail-class action asks for, in the catalog's words (Guidance Classes sheet).
ACTION_FIX = {
    "RESTART_BM": "Restart the machine (bare metal); if it recurs, contact support.",
    "RESET_GPU": "Reset the GPU (`nvidia-smi -r -i N` with no process on it) or reboot; "
    "if it recurs, contact support.",
    "RESTART_VM": "Restart the VM that owns the GPU.",
    "CHECK_MECHANICALS": "Check the GPU's seating and its auxiliary power connections.",
    "UPDATE_SWFW": "Update the driver and firmware to matching versions.",
    "WORKFLOW_XID_48": "Reset the GPU (drain and reset with Xid 63/64); if it recurs, run the "
    "field diagnostics.",
    "WORKFLOW_NVLINK_ERR": "Reset the GPU or reboot; if it persists, contact the vendor.",
    "WORKFLOW_NVLINK5_ERR": "Reset the GPU; decode the Xid's registers with NVIDIA's "
    "'XID 144-150 Decode' sheet if it recurs.",
}


# Xid 119 (GSP RPC timeout) and 120 (GSP error): the catalog's action is RESET_GPU. The known
# workaround on drivers that hit it is to run without the GSP firmware, possible only with the
# proprietary kernel module on pre-Blackwell GPUs (`NVreg_EnableGpuFirmware=0`; the open
# module and Blackwell require GSP): NVIDIA/open-gpu-kernel-modules#446 (thread, 2023-2026,
# where NVIDIA's 525 release notes v3.0 are quoted: "Fixed an issue specific to GSP-RM that
# could lead to GSP RPC timeout errors (Xid 119)", fixed in 525.105.17), and the driver
# README's "GSP Firmware" chapter (the EnableGpuFirmware module parameter).
GSP_XIDS = (119, 120)
GSP_FIX = (
    "Reset the GPU (`nvidia-smi -r -i N` with nothing on it) or reboot. If Xid {xid} returns, "
    "update the driver (some branches fixed GSP RPC timeouts, e.g. 525.105.17); a known "
    "workaround on affected drivers is to run without the GSP firmware: "
    "`options nvidia NVreg_EnableGpuFirmware=0` in /etc/modprobe.d, then reboot "
    "(proprietary kernel module on pre-Blackwell GPUs only)."
)
GSP_SOURCE = "https://github.com/NVIDIA/open-gpu-kernel-modules/issues/446"


def fix_for(xid: int, action: str) -> str:
    """The fix text of one Xid: GSP's own for 119/120, else the action's."""
    if xid in GSP_XIDS:
        return GSP_FIX.format(xid=xid)
    return ACTION_FIX.get(action, "See NVIDIA's Xid catalog for this code.")


def info(xid: int) -> XidInfo | None:
    return CATALOG.get(xid)


def severity_of(xid: int, text: str = "") -> str:
    """ "fail", "warn" or "info" for one Xid message (see the module docstring)."""
    row = CATALOG.get(xid)
    if row is None:
        return "warn"
    if row.action == "WORKFLOW_NVLINK5_ERR":
        if _NONFATAL.search(text):
            return "warn"
        return "fail" if _FATAL.search(text) else "warn"
    if row.action == "XID_154":
        action = recovery_action(text)
        return "info" if action in (None, "None") else "fail"
    if row.action in _FAIL_ACTIONS:
        return "fail"
    if xid == 94:
        return "warn"
    if row.action in _INFO_ACTIONS:
        return "info"
    return "warn"


def recovery_action(text: str) -> str | None:
    """Xid 154's new recovery action: "... from 0x0 (None) to 0x2 (Node Reboot Required)"."""
    m = _RECOVERY.search(text)
    return m.group(1).strip() if m else None
