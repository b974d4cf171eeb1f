"""Text data sets of the text track: GLUE SST-2 (001 Table 5).

Read from the data root (``$PUBENCH_DATA``) in the GLUE tsv layout, ``sst2/train.tsv``
and ``sst2/dev.tsv``: a header ``sentence<TAB>label``, then one sentence per line with
label 0 (negative) / 1 (positive). GLUE's ``test.tsv`` has no labels (the GLUE server
keeps them), so the text track evaluates on ``dev`` (872 sentences). Jobs never download:
a miss names the files to place and the ``pubench prepare sst2`` command that copies
them from ``../shared/data`` (checking the entry's checksums).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pubench.data.base import DATASETS, Dataset
from pubench.utils.lazy import lazy

torch = lazy("torch")  # loaded on first use: importing this module stays cheap (issue 34)

SPLITS = ("train", "dev")


@dataclass(frozen=True)
class TextSet:
    sentences: list[str]
    labels: torch.Tensor      # int64 (n,)
    classes: list[str]
    source: str

    def __len__(self) -> int:
        return len(self.sentences)


def read_glue_tsv(path: Path) -> tuple[list[str], list[int]]:
    """(sentences, labels) of a GLUE single-sentence tsv with a ``sentence  label`` header.
    Fields are split on tabs only: SST-2 sentences hold quotes, which are not csv quoting."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines or lines[0].split("\t")[:2] != ["sentence", "label"]:
        raise ValueError(f"{path}: expected a GLUE tsv with the header 'sentence<TAB>label'")
    sentences, labels = [], []
    for k, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 2 or fields[1].strip() not in ("0", "1"):
            raise ValueError(f"{path}:{k}: expected 'sentence<TAB>0|1', got {line[:80]!r}")
        sentences.append(fields[0].strip())
        labels.append(int(fields[1]))
    return sentences, labels


@dataclass(frozen=True)
class GlueTextDataset(Dataset):
    name: str
    folder: str
    classes: tuple[str, ...]
    title: str = ""
    sha256: dict[str, str] = field(default_factory=dict)  # file name -> checksum (checked by prepare)
    modality = "text"

    def files(self, root: Path) -> list[Path]:
        return [root / self.folder / f"{s}.tsv" for s in SPLITS]

    def availability(self, root: str | Path | None = None) -> str | None:
        from pubench.paths import data_root

        root = Path(root) if root is not None else data_root()
        missing = [str(p) for p in self.files(root) if not p.is_file()]
        if not missing:
            return None
        return (f"{self.name}: place the GLUE tsv files {', '.join(missing)} (header 'sentence<TAB>label'); "
                f"`pubench prepare {self.name} --from ../shared/data` copies them")

    def load(self, split: str, root: str | Path | None = None) -> TextSet:
        from pubench.paths import data_root

        if split not in SPLITS:
            raise ValueError(f"{self.name}: split must be one of {SPLITS} (GLUE's test labels are hidden), "
                             f"got {split!r}")
        root = Path(root) if root is not None else data_root()
        why = self.availability(root)
        if why:
            raise FileNotFoundError(why)
        path = root / self.folder / f"{split}.tsv"
        sentences, labels = read_glue_tsv(path)
        return TextSet(sentences, torch.tensor(labels, dtype=torch.long), list(self.classes), str(path))


TEXT_DATASETS = {"sst2": GlueTextDataset(
    "sst2", "sst2", ("negative", "positive"), title="SST-2",
    sha256={  # ../shared/data/MANIFEST.md
        "train.tsv": "48eac26399f8456935f81dd9e3a745c1430adb6c62e233ccfe22db4a0d15d1d1",
        "dev.tsv": "54a9c12c77e402fc14d6a66a506f24d999f596b0176eb777c972cccc2f9cc4b0",
        "test.tsv": "69a938605609b3e6663b4487918fe1565eb293734e6e520d0366d1d412fd2a13",
    })}

for _name, _ds in TEXT_DATASETS.items():
    DATASETS.register(_name, _ds)
