"""Model repository files: a real transformers folder is clean; each config check trips on its own file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.scanning import rule_ids, scan
from wscan.config import Config
from wscan.engine import Engine
from wscan.limits import Limits
from wscan.model import Severity

CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>'"
    " + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
ESCAPE = "{{ cycler.__init__.__globals__.os.popen('id').read() }}"


def write_json(folder: Path, name: str, value: object) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def hf_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder laid out like a Hugging Face model repository, written by transformers itself."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out = tmp_path_factory.mktemp("hf-repo")
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64)
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(do_sample=True, temperature=0.7, bos_token_id=1, eos_token_id=2)
    model.save_pretrained(out, max_shard_size="20KB")
    vocab = {t: i for i, t in enumerate(["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>", "hello"])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    tokenizer.chat_template = CHATML
    tokenizer.save_pretrained(out)
    (out / "README.md").write_text("---\nlicense: apache-2.0\nlibrary_name: transformers\n---\n# Tiny\n")
    (out / "LICENSE").write_text("Apache License 2.0\n")
    return out


def test_real_repository_is_clean(hf_repo: Path) -> None:
    names = {p.name for p in hf_repo.iterdir()}
    assert {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
            "chat_template.jinja", "model.safetensors.index.json"} <= names
    report = scan(hf_repo)
    assert [f.message for f in report.findings] == []
    assert report.count("scanned") == len(names) - 1  # all but LICENSE, plain text
    formats = {fmt for result in report.files for fmt in result.formats}
    assert {"model-config", "chat-template", "model-card", "safetensors"} <= formats


def test_template_inside_tokenizer_config_is_checked(hf_repo: Path, tmp_path: Path) -> None:
    config = json.loads((hf_repo / "tokenizer_config.json").read_text())
    config["chat_template"] = ESCAPE
    write_json(tmp_path, "tokenizer_config.json", config)
    report = scan(tmp_path)
    assert rule_ids(report) == {"WS-TPL-001", "WS-TPL-002", "WS-TPL-003", "WS-TPL-004"}
    assert all(f.evidence["field"] == "chat_template" for f in report.findings)


def test_named_template_list(tmp_path: Path) -> None:
    write_json(tmp_path, "tokenizer_config.json", {"chat_template": [
        {"name": "default", "template": CHATML}, {"name": "tool_use", "template": "{% include 'x' %}"}]})
    report = scan(tmp_path)
    assert rule_ids(report) == {"WS-TPL-006"}
    assert report.findings[0].evidence["field"] == "chat_template[tool_use]"


@pytest.mark.parametrize("name", ["chat_template.json", "processor_config.json"])
def test_template_in_other_json(tmp_path: Path, name: str) -> None:
    write_json(tmp_path, name, {"chat_template": "{{ x.__class__ }}"})
    assert rule_ids(scan(tmp_path)) == {"WS-TPL-001"}


def test_template_of_the_wrong_type(tmp_path: Path) -> None:
    write_json(tmp_path, "chat_template.json", {"chat_template": 5})
    assert rule_ids(scan(tmp_path)) == {"WS-TPL-007"}


def test_jinja_file(tmp_path: Path) -> None:
    (tmp_path / "chat_template.jinja").write_text("{{ lipsum.__globals__['os'] }}")
    assert rule_ids(scan(tmp_path)) == {"WS-TPL-001", "WS-TPL-002", "WS-TPL-004"}


OTHER_JINJA = Path(__file__).resolve().parents[1] / "data" / "jinja_other"


def test_other_programs_jinja_templates_are_not_chat_templates(tmp_path: Path) -> None:
    """mne's and nilearn's HTML report templates (private names, include/extends, computed keys) are not chat
    templates: no loader renders them as one, and they hold no escape."""
    report = scan(OTHER_JINJA)
    templates = [f for f in report.files if f.path.endswith(".jinja")]
    assert len(templates) == 6 and all(f.status == "scanned" and f.formats == ("chat-template",) for f in templates)
    assert report.findings == [], [f.message for f in report.findings]


def test_the_same_template_at_a_chat_template_name_is_a_chat_template(tmp_path: Path) -> None:
    """Named as transformers reads a chat template, mne's HTML is judged as one: its private names and its
    include are what a chat template never needs."""
    source = (OTHER_JINJA / "mne" / "repr" / "_frequencies.html.jinja").read_bytes()
    (tmp_path / "chat_template.jinja").write_bytes(source)
    (tmp_path / "additional_chat_templates").mkdir()
    (tmp_path / "additional_chat_templates" / "report.jinja").write_bytes(source)
    (tmp_path / "reads_the_chat.jinja").write_bytes(b"{% for message in messages %}{% include 'x' %}{% endfor %}")
    report = scan(tmp_path)
    by_file = {p: {f.rule_id for f in report.findings if f.location.path.endswith(p)}
               for p in ("/chat_template.jinja", "/report.jinja", "/reads_the_chat.jinja")}
    html = {"WS-TPL-001", "WS-TPL-006"}
    assert by_file == {"/chat_template.jinja": html, "/report.jinja": html, "/reads_the_chat.jinja": {"WS-TPL-006"}}


@pytest.mark.parametrize(
    ("source", "rule"),
    [
        (ESCAPE, "WS-TPL-002"),
        ("{{ ''.__class__.__mro__[1].__subclasses__() }}", "WS-TPL-001"),
        ("{{ '{0.__class__}'.format(x) }}", "WS-TPL-001"),
        ("{{ x.gi_frame.f_globals }}", "WS-TPL-001"),
    ],
)
def test_an_escape_in_any_jinja_file_is_found(tmp_path: Path, source: str, rule: str) -> None:
    """A `.jinja` file that is not a chat template is still judged for escapes: its own program may render it
    without a sandbox."""
    (tmp_path / "report.html.jinja").write_text(source, encoding="utf-8")
    found = {f.rule_id for f in scan(tmp_path).findings if f.severity >= Severity.HIGH}
    assert rule in found


NESTED_LOOPS = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"


def test_a_template_reached_through_a_symlinked_template_folder_is_still_judged(tmp_path: Path) -> None:
    """Review 22: additional_chat_templates/ as a link to tpl/, whose tool_use.jinja transformers renders whenever
    tools are passed (nested constant loops hung it). The file is reached by its own name, and judged as a chat
    template by what it reads (`tools`); one that reads nothing is still judged for its render cost."""
    (tmp_path / "tpl").mkdir()
    (tmp_path / "tpl" / "tool_use.jinja").write_text("{% for t in tools %}{{ t.name }}{% endfor %}" + NESTED_LOOPS)
    (tmp_path / "tpl" / "quiet.jinja").write_text(NESTED_LOOPS)
    (tmp_path / "additional_chat_templates").symlink_to("tpl")
    report = scan(tmp_path)
    by_file = {p: {f.rule_id for f in report.findings if f.location.path.endswith(p)} for p in ("tool_use.jinja",
                                                                                                  "quiet.jinja")}
    assert by_file == {"tool_use.jinja": {"WS-TPL-010"}, "quiet.jinja": {"WS-TPL-010"}}


def test_names_another_programs_template_builds_itself_are_judged(tmp_path: Path) -> None:
    """Review 22: an HTML template that assembles `__class__` and friends from `'%c'|format(95)` reaches Python's
    internals under a plain Environment (shown here with `__class__`); keys from its program's data pass."""
    from jinja2 import Environment

    built = "{%- set u = '%c'|format(95) * 2 -%}{{ ''[u ~ 'class' ~ u] }}"
    assert Environment().from_string(built).render() == "<class 'str'>"
    (tmp_path / "report.html.jinja").write_text(built + "<h1>{{ title }}</h1>")
    (tmp_path / "rows.html.jinja").write_text("{% for k in columns %}<td>{{ row[k] }}</td>{% endfor %}")
    report = scan(tmp_path)
    assert {f.rule_id for f in report.findings if f.location.path.endswith("report.html.jinja")} == {"WS-TPL-005"}
    assert not [f for f in report.findings if f.location.path.endswith("rows.html.jinja")]


def test_jinja_file_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "chat_template.jinja").write_bytes(b"{{ x }}\xff")
    assert rule_ids(scan(tmp_path)) == {"WS-TPL-007"}


def test_local_custom_code(tmp_path: Path) -> None:
    write_json(tmp_path, "config.json", {"auto_map": {"AutoModel": "modeling_x.XModel"}, "architectures": ["X"]})
    report = scan(tmp_path)
    assert rule_ids(report) == {"WS-REPO-001"}
    (finding,) = report.findings
    assert finding.evidence["missing"] == "modeling_x.py"  # would be fetched from the hub


def test_tokenizer_auto_map_pairs(tmp_path: Path) -> None:
    write_json(tmp_path, "tokenizer_config.json", {"auto_map": {"AutoTokenizer": ["tokenization_x.XTok", None]}})
    (tmp_path / "tokenization_x.py").write_text("class XTok:\n    pass\n")
    report = scan(tmp_path)
    assert rule_ids(report) == {"WS-REPO-001", "WS-CODE-001"}
    assert next(f for f in report.findings if f.rule_id == "WS-REPO-001").evidence["missing"] == ""


@pytest.mark.parametrize("ref", ["evil/repo--modeling_x.XModel", "../../x", "https://example.com/x.py"])
def test_code_from_another_repository(tmp_path: Path, ref: str) -> None:
    write_json(tmp_path, "config.json", {"auto_map": {"AutoModel": ref}})
    assert rule_ids(scan(tmp_path)) == {"WS-REPO-002"}


def test_auto_map_in_any_json(tmp_path: Path) -> None:
    write_json(tmp_path, "custom_pipeline.json", {"auto_map": {"AutoModel": "a--b.C"}})
    assert rule_ids(scan(tmp_path)) == {"WS-REPO-002"}


def test_trust_remote_code_key(tmp_path: Path) -> None:
    write_json(tmp_path, "generation_config.json", {"trust_remote_code": True})
    assert rule_ids(scan(tmp_path)) == {"WS-REPO-003"}


def test_unknown_architecture(tmp_path: Path) -> None:
    write_json(tmp_path, "config.json", {"architectures": ["LlamaForCausalLM", "SneakyForCausalLM"]})
    report = scan(tmp_path)
    assert rule_ids(report) == {"WS-REPO-004"}
    assert report.findings[0].evidence["name"] == "SneakyForCausalLM"


@pytest.mark.parametrize(
    ("data", "reason", "also"),
    [
        (b'{"auto_map": {}, "auto_map": {"AutoModel": "x.Y"}}', "duplicate key", {"WS-REPO-001"}),
        (b'{"temperature": NaN}', "NaN", set()),
        (b'{"a": 1', "Expecting", set()),
        (b'{"a": "\xff"}', "not UTF-8", set()),
        (b"[1, 2]", "not an object", set()),
    ],
)
def test_invalid_json(tmp_path: Path, data: bytes, reason: str, also: set[str]) -> None:
    (tmp_path / "config.json").write_bytes(data)  # read by name, as the loaders read it, whatever it starts with
    report = scan(tmp_path)
    assert rule_ids(report) == {"WS-REPO-005"} | also
    assert reason in next(f for f in report.findings if f.rule_id == "WS-REPO-005").message
    assert report.files[0].status == "failed"


def test_content_of_a_file_python_reads_is_judged_though_not_strict(tmp_path: Path) -> None:
    """transformers reads config.json with Python's json (NaN accepted, the last duplicate wins): a NaN or a
    duplicate key must not hide the auto_map, trust_remote_code and template it would act on."""
    (tmp_path / "config.json").write_text(json.dumps(
        {"auto_map": {"AutoModel": "evil/repo--modeling_x.X"}, "layer_norm_scale": float("nan")}))
    assert rule_ids(scan(tmp_path)) == {"WS-REPO-005", "WS-REPO-002"}
    (tmp_path / "config.json").unlink()
    (tmp_path / "tokenizer_config.json").write_text(
        '{"chat_template": "{{ messages }}", "trust_remote_code": true, "chat_template": ' + json.dumps(ESCAPE) + "}"
    )
    report = scan(tmp_path)
    assert {"WS-REPO-005", "WS-REPO-003", "WS-TPL-001"} <= rule_ids(report)
    assert report.files[0].status == "failed"


def test_json_python_cannot_read_either_is_only_invalid(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_bytes(b'{"auto_map": {"AutoModel": "a--b.C"}, NaN')
    assert rule_ids(scan(tmp_path)) == {"WS-REPO-005"}


def test_local_custom_pipeline(tmp_path: Path) -> None:
    write_json(tmp_path, "config.json", {"architectures": ["LlamaForCausalLM"], "custom_pipelines": {
        "pair-classification": {"impl": "custom_pipe.PairPipeline", "pt": ["AutoModelForSequenceClassification"]}}})
    report = scan(tmp_path)
    assert rule_ids(report) == {"WS-REPO-001"}
    (finding,) = report.findings
    assert finding.evidence["field"] == "custom_pipelines"
    assert finding.evidence["missing"] == "custom_pipe.py"


def test_custom_pipeline_from_another_repository(tmp_path: Path) -> None:
    write_json(tmp_path, "config.json", {"custom_pipelines": {
        "text-generation": {"impl": "modeling_x.X"}, "evil-task": {"impl": "evil/repo--pipe.EvilPipe", "pt": []}}})
    report = scan(tmp_path)
    assert rule_ids(report) == {"WS-REPO-002"}
    assert "evil/repo--pipe.EvilPipe" in report.findings[0].message


def test_custom_pipelines_without_impl_load_nothing(tmp_path: Path) -> None:
    write_json(tmp_path, "config.json", {"custom_pipelines": {"x": {"pt": []}, "y": "z"}})
    assert rule_ids(scan(tmp_path)) == set()


ST_MODULES = [
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
]


def test_sentence_transformers_modules_are_clean(tmp_path: Path) -> None:
    write_json(tmp_path, "modules.json", ST_MODULES)
    write_json(tmp_path, "config_sentence_transformers.json",
               {"__version__": {"sentence_transformers": "5.1.2"}, "prompts": {}, "similarity_fn_name": "cosine"})
    write_json(tmp_path / "1_Pooling", "config.json", {"word_embedding_dimension": 16, "pooling_mode_mean": True})
    report = scan(tmp_path)
    assert report.findings == []
    assert {fmt for result in report.files for fmt in result.formats} == {"model-config"}


def test_sentence_transformers_module_outside_the_library(tmp_path: Path) -> None:
    """SentenceTransformer(folder) imports `custom_pool.Evil` from the folder, trust_remote_code or not."""
    custom = {"idx": 1, "name": "1", "path": "", "type": "custom_pool.Evil"}
    write_json(tmp_path, "modules.json", [*ST_MODULES[:1], custom])
    (tmp_path / "custom_pool.py").write_text("import torch\n\n\nclass Evil(torch.nn.Module):\n    pass\n")
    report = scan(tmp_path)
    assert rule_ids(report) == {"WS-REPO-008", "WS-CODE-001"}  # modules.json marks the folder: its code is read
    finding = next(f for f in report.findings if f.rule_id == "WS-REPO-008")
    assert finding.severity == Severity.HIGH
    assert finding.evidence["references"] == "custom_pool.Evil"
    assert finding.evidence["missing"] == ""


@pytest.mark.parametrize("ref", ["evil/repo--custom_pool.Evil", "not a class"])
def test_sentence_transformers_module_from_another_repository(tmp_path: Path, ref: str) -> None:
    write_json(tmp_path, "modules.json", [{"idx": 0, "name": "0", "path": "", "type": ref}])
    report = scan(tmp_path)
    assert rule_ids(report) == {"WS-REPO-002"}
    assert report.findings[0].evidence["field"] == "type"


def test_modules_json_not_strict_is_judged_all_the_same(tmp_path: Path) -> None:
    (tmp_path / "modules.json").write_text('[{"type": "x.Y", "type": "custom_pool.Evil", "idx": NaN}]')
    report = scan(tmp_path)
    assert rule_ids(report) == {"WS-REPO-005", "WS-REPO-008"}
    assert next(f for f in report.findings if f.rule_id == "WS-REPO-008").evidence["references"] == "custom_pool.Evil"


def test_oversized_field(tmp_path: Path) -> None:
    write_json(tmp_path, "tokenizer_config.json", {"model_max_length": 512, "extra": {"blob": "A" * (1 << 20 + 1)}})
    report = scan(tmp_path)
    assert rule_ids(report) == {"WS-REPO-006"}
    assert report.findings[0].evidence["field"] == "extra.blob"


def test_file_over_limit(tmp_path: Path) -> None:
    write_json(tmp_path, "tokenizer.json", {"model": {"vocab": {str(i): i for i in range(100)}}})
    report = Engine(Config(limits=Limits(max_json_bytes=100))).scan([tmp_path])
    assert rule_ids(report) == {"WS-REPO-007"}


def test_adapter_and_card_facts_make_no_findings(tmp_path: Path) -> None:
    write_json(tmp_path, "adapter_config.json", {"peft_type": "LORA", "base_model_name_or_path": "org/base"})
    (tmp_path / "README.md").write_text("---\nlicense: mit\nbase_model: [org/base]\n---\n")
    assert scan(tmp_path).findings == []


def test_an_oversized_field_past_five_million_values_is_found(tmp_path: Path) -> None:
    """The walk for long strings used to stop silently after 5,000,000 values (a tokenizer.json, which no other
    walk reads for keys, passed with a 1 MiB field placed after them). Now nothing but the document bounds it."""
    big = "A" * (1024 * 1024 + 1)
    (tmp_path / "tokenizer.json").write_text(json.dumps({"model": {"note": big}, "merges": [0] * 5_000_001}))
    report = scan(tmp_path)
    assert [(f.rule_id, f.evidence["field"]) for f in report.findings] == [("WS-REPO-006", "model.note")]


@pytest.mark.parametrize(("depth", "found"), [(7, True), (8, False)])
def test_sub_configs_are_looked_into_eight_deep(depth: int, found: bool) -> None:
    """An `auto_map` is looked for in sub-configs down to MAX_SUBCONFIG_DEPTH (8) containers below the top."""
    import wscan.scanners.repo_files as repo_files

    holder: dict[str, object] = {"auto_map": {"AutoModel": "m.M"}}
    top = holder
    for _ in range(depth):
        top = {"sub": top}
    expected = [("sub." * depth)[:-1] + ".auto_map"] if found else []
    assert [field for field, _ in repo_files._nested_auto_maps(top)] == expected


def _word_tokenizer(folder: Path, config: dict[str, object]) -> None:
    """A tokenizer folder transformers loads offline: a word-level tokenizer.json and the given config."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    folder.mkdir(parents=True)
    tokenizer = Tokenizer(models.WordLevel({"<unk>": 0, "<s>": 1, "</s>": 2, "hi": 3}, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps(config))


def test_a_tokenizer_config_setting_a_caller_variable_is_high(tmp_path: Path) -> None:
    """Review 20: transformers hands `extra_special_tokens` to the chat template as render variables, so one named
    like a caller's option (`date_string`) is set by the model's author, and the template checker trusts it as the
    caller's. Proved with transformers' own apply_chat_template; real extra tokens (`image_token`) pass."""
    from transformers import AutoTokenizer

    base = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>",
            "chat_template": "{% for m in messages %}{{ m.content }}{% endfor %}|{{ date_string }}"}  # fmt: skip
    hostile = tmp_path / "hostile"
    _word_tokenizer(hostile, {**base, "extra_special_tokens": {"date_string": "__class__"}})
    rendered = AutoTokenizer.from_pretrained(hostile).apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False
    )
    assert rendered == "hi|__class__", "transformers no longer passes extra tokens to templates: revisit WS-TPL-011"
    assert rule_ids(scan(hostile)) == {"WS-TPL-011"}

    guard = tmp_path / "guard"  # a guard model's render option is the caller's too
    _word_tokenizer(guard, {**base, "extra_special_tokens": {"guardian_config": "__class__"}})
    assert rule_ids(scan(guard)) == {"WS-TPL-011"}

    real = tmp_path / "real"
    _word_tokenizer(real, {**base, "extra_special_tokens": {"image_token": "<image>", "boi_token": "<boi>"}})
    assert rule_ids(scan(real)) == set()


def test_templates_named_in_a_dict_are_judged(tmp_path: Path) -> None:
    """Review 45: transformers takes `chat_template` as a dict of named templates as it is (and renders `default`);
    wscan called the dict malformed (medium) and judged nothing in it."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import AutoTokenizer

    tokenizer = Tokenizer(models.WordLevel({"<unk>": 0, "hi": 1}, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    templates = {"default": "{% for m in messages %}dict:{{ m.content }}{% endfor %}",
                 "tool_use": "{{ cycler.__init__.__globals__.os.popen('id').read() }}"}  # fmt: skip
    write_json(tmp_path, "tokenizer_config.json", {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "<unk>",
                                                   "chat_template": templates})  # fmt: skip
    loaded = AutoTokenizer.from_pretrained(str(tmp_path))
    assert loaded.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False) == "dict:hi"
    found = [f for f in scan(tmp_path).findings if f.severity == Severity.CRITICAL]
    assert {f.evidence["field"] for f in found} == {"chat_template[tool_use]"}


@pytest.mark.parametrize("name", ["chat_template.jinja", "additional_chat_templates/tool_use.jinja"])
def test_a_nul_in_a_template_file_does_not_hide_it(tmp_path: Path, name: str) -> None:
    """Review 45: a NUL in a comment (`{#\\0#}`) made wscan call chat_template.jinja an unknown format (low);
    transformers reads it as text and renders it."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import AutoTokenizer

    tokenizer = Tokenizer(models.WordLevel({"<unk>": 0, "hi": 1}, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    write_json(tmp_path, "tokenizer_config.json", {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "<unk>"})
    (tmp_path / name).parent.mkdir(exist_ok=True)
    (tmp_path / name).write_text("{#\0#}{% for m in messages %}nul:{{ m.content }}{% endfor %}{{ ''.__class__ }}")
    loaded = AutoTokenizer.from_pretrained(str(tmp_path))
    chosen = "tool_use" if "/" in name else None
    rendered = loaded.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False, chat_template=chosen)
    assert rendered.startswith("nul:hi")
    assert "WS-TPL-001" in rule_ids(scan(tmp_path))
