"""The NVML boundary turns every failure into a sentence or a None, and a dead GPU into GpuLost."""

from __future__ import annotations

import pytest

from fakes.fake_pynvml import FakeGpu, FakePynvml
from xfertop.sources.gpu.nvml_api import GpuLost, NvmlApi

NO_DRIVER = "no NVIDIA driver found (libnvidia-ml.so.1): showing host metrics only"


def test_this_machine_without_a_driver_says_so_in_one_sentence() -> None:
    """The real pynvml on a machine with no NVIDIA library (CI, this laptop)."""
    api = NvmlApi()
    error = api.init()
    if error is None:
        api.shutdown()
        pytest.skip("an NVIDIA driver is present here")
    assert error == NO_DRIVER


@pytest.mark.parametrize(
    ("init_error", "words"),
    [
        ("NVML_ERROR_LIBRARY_NOT_FOUND", NO_DRIVER),
        ("NVML_ERROR_DRIVER_NOT_LOADED", "not loaded"),
        ("NVML_ERROR_NO_PERMISSION", "no permission"),
        ("NVML_ERROR_UNKNOWN", "unknown reason"),
        ("NVML_ERROR_LIB_RM_VERSION_MISMATCH", "versions differ"),
        ("NVML_ERROR_TIMEOUT", "NVML failed to start"),
    ],
)
def test_init_failures_become_sentences(init_error: str, words: str) -> None:
    error = NvmlApi(FakePynvml(init_error=init_error)).init()
    assert error is not None and words in error and error.endswith("showing host metrics only")


def ready(fake: FakePynvml) -> NvmlApi:
    api = NvmlApi(fake)
    assert api.init() is None
    return api


def test_unanswered_questions_are_none() -> None:
    gpu = FakeGpu(0, not_supported={"nvmlDeviceGetPowerUsage"})
    api = ready(FakePynvml([gpu]))
    assert api.query("nvmlDeviceGetPowerUsage", gpu) is None
    assert api.query("nvmlDeviceGetNumaNodeId", gpu) is None  # NOT_SUPPORTED on the real H200
    assert api.query("nvmlDeviceGetProcessUtilization", gpu) is None  # NOT_FOUND with no process
    assert api.query("nvmlDeviceGetComputeProcesses", gpu) is None  # not in this binding
    assert api.query("nvmlDeviceGetName", gpu) == "NVIDIA H200"


@pytest.mark.parametrize(
    "code", ["NVML_ERROR_NO_PERMISSION", "NVML_ERROR_FUNCTION_NOT_FOUND", "NVML_ERROR_TIMEOUT"]
)
def test_other_errors_of_one_call_are_none(code: str) -> None:
    gpu = FakeGpu(0)
    fake = FakePynvml([gpu])
    gpu.answers["nvmlDeviceGetTemperature"] = None
    api = ready(fake)

    def refuse(_gpu: FakeGpu, _sensor: int) -> int:
        raise fake.NVMLError(getattr(fake, code))

    fake.nvmlDeviceGetTemperature = refuse
    assert api.query("nvmlDeviceGetTemperature", gpu, 0) is None


@pytest.mark.parametrize(
    ("code", "words"),
    [("NVML_ERROR_GPU_IS_LOST", "fell off the bus"), ("NVML_ERROR_UNKNOWN", "stopped answering")],
)
def test_a_gpu_that_stops_answering_raises_gpu_lost(code: str, words: str) -> None:
    gpu = FakeGpu(0)
    fake = FakePynvml([gpu])
    api = ready(fake)

    def dead(_gpu: FakeGpu) -> int:
        raise fake.NVMLError(getattr(fake, code))

    fake.nvmlDeviceGetPowerUsage = dead
    with pytest.raises(GpuLost, match=words):
        api.query("nvmlDeviceGetPowerUsage", gpu)


def test_system_questions_never_raise_even_when_the_answer_is_lost() -> None:
    fake = FakePynvml([FakeGpu(0)])
    api = ready(fake)

    def lost() -> str:
        raise fake.NVMLError(fake.NVML_ERROR_GPU_IS_LOST)

    fake.nvmlSystemGetDriverVersion = lost
    assert api.system("nvmlSystemGetDriverVersion") is None
    assert api.device_count() == 1


def test_field_values_are_checked_one_by_one() -> None:
    """The call succeeds while one field says NOT_SUPPORTED (drivers before R555 for 197/198)."""
    gpu = FakeGpu(0, fields_not_supported={197})
    api = ready(FakePynvml([gpu]))
    readings = api.field_values(gpu, (197, 198, 173, 99999))
    assert readings[197] is None and readings[99999] is None
    assert readings[198] is not None and readings[198].value == 2_112_665_548
    assert readings[173] is not None and readings[173].value == 0
    assert readings[198].timestamp_s > 1.7e9  # microseconds of wall time, in seconds


def test_the_first_of_equivalent_calls_that_answers_wins() -> None:
    gpu = FakeGpu(0)
    gpu.answers["nvmlDeviceGetCurrentClocksThrottleReasons"] = 4
    api = ready(FakePynvml([gpu], missing_in_binding=frozenset({"nvmlDeviceGetCurrentClocksEventReasons"})))
    assert (
        api.first_answer(
            ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"), gpu
        )
        == 4
    )


def test_bus_id_bytes_from_old_bindings_are_text() -> None:
    gpu = FakeGpu(0)
    gpu.answers["nvmlDeviceGetName"] = b"NVIDIA H200"
    assert ready(FakePynvml([gpu])).query("nvmlDeviceGetName", gpu) == "NVIDIA H200"


def test_shutdown_happens_once() -> None:
    fake = FakePynvml([FakeGpu(0)])
    api = ready(fake)
    api.shutdown()
    api.shutdown()
    assert fake.calls.count("nvmlShutdown") == 1
