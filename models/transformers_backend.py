"""The transformers backend: continuous batching over the model's own forward pass, on CPU or one GPU."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

import torch
from transformers import DynamicCache

from genenv.models.cpu.kv_cache import DecodingCache
from genenv.models.cpu.onednn_linears import packed_linears
from genenv.models.decoding import DecodingRows, Row, cache_layers, next_tokens
from genenv.models.memory import return_freed_memory
from genenv.models.policy import PolicyPair, cache_argument, length_batches, shared_prefix_length
from genenv.models.sampling import Completion, SamplingSettings, encode_prompt, stop_ids


def padded(prompts: Sequence[Sequence[int]], pad_id: int, after: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """(input ids, attention mask) of the prompts padded to the longest after their first `after` tokens (0: left
    padding), so every row ends where it generates and rows sharing `after` first tokens hold them in one place.
    Positions count only unmasked tokens, so where the padding sits changes nothing a row attends to."""
    width = max(len(p) for p in prompts)
    input_ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    attention = torch.zeros_like(input_ids)
    for row, prompt in enumerate(prompts):
        rest = width - len(prompt) + after
        input_ids[row, :after], input_ids[row, rest:] = torch.tensor(prompt[:after]), torch.tensor(prompt[after:])
        attention[row, :after], attention[row, rest:] = 1, 1
    return input_ids, attention


class TransformersBackend:
    """Continuous batching over the model's forward pass, with the role's adapter merged into a working copy of
    the weights it touches for the whole call (`PolicyPair.merged`), and every linear layer's weight laid out
    once for the CPU's matmul kernel (`packed_linears`).

    Prompts join shortest first (`batches`), as many at a time as fit `batch_size` rows of the longest prompt in
    tokens; a row's answer is done as soon as it stops, and queued prompts take its room once a quarter of the
    room is free (`admitted`), so no answer waits on the longest one of its batch (ended rows leave the cache
    when rows join, or once they are half of it: moving the cache costs more than computing a few idle rows).
    Joining rows prefill without repeating work (`prefilled`): the tokens every prompt of the call starts with
    (the system prompt) are computed once per call, and each distinct prompt once for all the rows that repeat
    it (a task's k rollouts, a seed's n variations). Each row samples from its own random stream, seeded by the
    call's seed and its place in the call, so its tokens do not depend on which rows decode beside it; greedy
    rows take the argmax.
    `prefill_chunk` splits a prefill into chunks of that many positions (None: one pass). Padded prompts need an
    explicit attention mask, so one pass makes CPU attention compute the whole prompt-by-prompt square and hold
    every layer's intermediates for all prompt tokens at once; chunks attend only to the positions before them.
    On long prompts that takes less time and less memory, with the same greedy tokens in fp32.
    Each call ends by handing the C heap's free pages back: its KV caches are gone, and glibc would otherwise
    hold their pages under the next stage (both measured: docs/performance.md, 'Measurements behind the code').
    Its steps (`decode`, `admitted`, `compacts`, `prefix`, `prefilled`, `prefill`, `step`, `sample`) are public, so a
    benchmark times one or puts an earlier way in its place (bench/) without reaching into the backend.
    """

    def __init__(self, policy: PolicyPair, batch_size: int = 16, prefill_chunk: int | None = 256) -> None:
        self.policy = policy
        self.batch_size = batch_size
        self.prefill_chunk = prefill_chunk

    def generate(
        self,
        role: str,
        conversations: list[list[dict[str, str]]],
        sampling: SamplingSettings,
        progress: Callable[[int], None] | None = None,
        first_row: int = 0,
    ) -> list[Completion]:
        """Return one completion per conversation, in input order. `progress(n)` gets the rows each step ends.
        `first_row`: the conversations are a call's rows from that one on (a shard), and sample as they would there."""
        tokenizer = self.policy.tokenizer
        prompts = [encode_prompt(tokenizer, conversation) for conversation in conversations]
        model = self.policy.model
        was_training = model.training
        model.eval()
        try:
            with (
                self.policy.merged(role),
                packed_linears(model, self.policy.compute_dtype),
                torch.inference_mode(),
                self.policy.autocast(),
            ):
                generated = self.decode(prompts, sampling, progress, first_row)
        finally:
            model.train(was_training)
            return_freed_memory()
        return self.completions(prompts, generated)

    def completions(self, prompts: list[list[int]], generated: list[list[int]]) -> list[Completion]:
        """Each prompt's `decode` tokens as a completion: they end at the first stop token, which stays in the ids
        (GRPO must also reinforce, or discourage, stopping there), or at max_new_tokens."""
        tokenizer, stops = self.policy.tokenizer, stop_ids(self.policy)
        return [
            Completion(tokenizer.decode(ids, skip_special_tokens=True).strip(), list(prompt), ids, ids[-1] in stops)
            for prompt, ids in zip(prompts, generated, strict=True)
        ]

    def batches(self, prompts: list[list[int]], max_new_tokens: int) -> list[list[int]]:
        """Indices of `prompts`, shortest first, cut where the rows so far would pass the tokens of `batch_size`
        rows of the longest prompt (counting the tokens to generate): shorter prompts fill wider batches at the
        same memory. `decode` queues prompts in this order and admits its first batch at once."""
        lengths = [len(p) for p in prompts]
        return length_batches(lengths, self._budget(lengths, max_new_tokens), extra=max_new_tokens)

    def _budget(self, lengths: Sequence[int], max_new_tokens: int) -> int:
        return self.batch_size * (max(lengths, default=0) + max_new_tokens)

    def decode(
        self,
        prompts: list[list[int]],
        sampling: SamplingSettings,
        progress: Callable[[int], None] | None,
        first_row: int = 0,
    ) -> list[list[int]]:
        """Each prompt's generated tokens, up to and including a stop token or `max_new_tokens` of them."""
        if not prompts:
            return []
        cap = sampling.max_new_tokens
        queue = deque(i for batch in self.batches(prompts, cap) for i in batch)
        budget = self._budget([len(p) for p in prompts], cap)
        generators = row_generators(sampling.seed, len(prompts), self.policy.device, first_row)
        prefix = self.prefix(prompts)
        stops = stop_ids(self.policy)
        results: list[list[int]] = [[] for _ in prompts]
        rows: DecodingRows | None = None
        while queue or rows is not None:
            joining = self.admitted(rows, [len(prompts[i]) for i in queue], budget, cap)
            if joining:
                group = [queue.popleft() for _ in range(joining)]
                new = self._prefill_group(prefix, [prompts[i] for i in group], group, generators, sampling)
                if rows is None:
                    rows = new
                else:
                    rows.regroup(rows.running(), new)
            else:
                rows.append(self.step(rows, sampling))
            ended = [r for r in rows.rows if not r.ended and (r.tokens[-1] in stops or len(r.tokens) >= cap)]
            for row in ended:
                row.ended = True
                results[row.index] = list(row.tokens)
            if ended and progress is not None:
                progress(len(ended))
            running = rows.running()
            if not running:
                rows = None
            elif self.compacts(rows):
                rows.regroup(running)
        return results

    def admitted(self, rows: DecodingRows | None, queued: list[int], budget: int, max_new_tokens: int) -> int:
        """How many queued prompts (of these lengths, in queue order) join now: as many as fit the budget with the
        running rows, counted like `batches`, once that is a quarter of the room or the whole queue (a prefill
        of a few rows costs about as much as many decoding steps); at least one when nothing runs. The queue is
        shortest first, so a joining prompt is the longest yet and every row is counted at its length."""
        running = 0 if rows is None else len(rows.running())
        fit = 0
        while fit < len(queued) and (running + fit + 1) * (queued[fit] + max_new_tokens) <= budget:
            fit += 1
        if running == 0:
            return max(fit, min(len(queued), 1))
        room = budget // (queued[0] + max_new_tokens) if queued else 0
        return fit if fit == len(queued) or 4 * fit >= room else 0

    def compacts(self, rows: DecodingRows) -> bool:
        """Whether to drop the ended rows now: once they are half the rows, as a step computes them too."""
        return 2 * (len(rows.rows) - len(rows.running())) >= len(rows.rows)

    def prefix(self, prompts: list[list[int]]) -> tuple[int, DynamicCache | None]:
        """The number of tokens every prompt of the call starts with, and their KV cache (one row), computed
        once for the whole call."""
        shared = shared_prefix_length(list({tuple(p) for p in prompts}))
        if not shared:
            return 0, None
        kv_cache = DecodingCache()
        ids = torch.tensor([prompts[0][:shared]], device=self.policy.device)
        self.prefill(kv_cache, ids, torch.ones_like(ids))
        return shared, kv_cache

    def _prefill_group(
        self,
        prefix: tuple[int, DynamicCache | None],
        prompts: list[list[int]],
        indices: list[int],
        generators: list[torch.Generator],
        sampling: SamplingSettings,
    ) -> DecodingRows:
        """Joining rows (the prompts at `indices`) with their prompts in a cache and their first token sampled."""
        kv_cache, attention, logits = self.prefilled(prefix, prompts)
        rows = DecodingRows(kv_cache, attention, [Row(i, generators[i]) for i in indices])
        rows.append(self.sample(logits, rows.generators(), sampling))
        return rows

    def prefilled(
        self, prefix: tuple[int, DynamicCache | None], prompts: list[list[int]]
    ) -> tuple[DynamicCache, torch.Tensor, torch.Tensor]:
        """(KV cache, attention mask, last logits) of each prompt without repeating work: the call's shared
        tokens copied from `prefix`, then the rest of each distinct prompt prefilled once, padded after the
        shared tokens (`padded`) so those sit at the same columns in every row; the cache's rows are then
        repeated for the prompts that are the same."""
        shared, prefix_cache = prefix
        distinct: dict[tuple[int, ...], int] = {}
        row_of = [distinct.setdefault(tuple(p), len(distinct)) for p in prompts]
        device = self.policy.device
        input_ids, attention = padded(list(distinct), self.policy.tokenizer.pad_token_id, after=shared)
        input_ids, attention = input_ids.to(device), attention.to(device)
        kv_cache = DecodingCache()
        for index, (keys, values) in enumerate(cache_layers(prefix_cache) if prefix_cache is not None else []):
            kv_cache.update(keys.expand(len(distinct), -1, -1, -1), values.expand(len(distinct), -1, -1, -1), index)
        logits = self.prefill(kv_cache, input_ids, attention, start=shared)
        select = torch.tensor(row_of, device=device)
        kv_cache.batch_select_indices(select)
        return kv_cache, attention[select], logits[select]

    def sample(
        self, logits: torch.Tensor, generators: list[torch.Generator], sampling: SamplingSettings
    ) -> torch.Tensor:
        """Each row's next token from its last logits (`next_tokens`)."""
        return next_tokens(logits, generators, sampling.temperature, sampling.top_p)

    def step(self, rows: DecodingRows, sampling: SamplingSettings) -> torch.Tensor:
        """One decoding step: every row's last token through the model, the next token sampled per row."""
        model = self.policy.model
        input_ids, positions = rows.next_inputs()
        logits = model(
            input_ids=input_ids,
            attention_mask=rows.attention,
            position_ids=positions,
            logits_to_keep=1,
            use_cache=True,
            **{cache_argument(model): rows.cache},
        ).logits[:, -1]
        return self.sample(logits, rows.generators(), sampling)

    def prefill(
        self, kv_cache: DynamicCache, input_ids: torch.Tensor, attention: torch.Tensor, start: int = 0
    ) -> torch.Tensor:
        """Extend `kv_cache` (holding columns up to `start`) with the rest of these columns, in chunks of
        `prefill_chunk`, each prompt's positions counting only its own tokens (padding at 0); return the logits
        after the last column."""
        positions = (attention.cumsum(-1) - 1).masked_fill(attention == 0, 0)
        chunk = self.prefill_chunk or max(input_ids.shape[1], 1)
        model = self.policy.model
        for begin in range(start, input_ids.shape[1], chunk):
            end = begin + chunk
            logits = model(
                input_ids=input_ids[:, begin:end],
                attention_mask=attention[:, :end],
                position_ids=positions[:, begin:end],
                logits_to_keep=1,
                use_cache=True,
                **{cache_argument(model): kv_cache},
            ).logits
        return logits[:, -1]


def row_generators(seed: int, rows: int, device: torch.device | str, first_row: int = 0) -> list[torch.Generator]:
    """One random stream per row of a call, from `seed`: a row draws the same tokens whatever its batch. Rows
    `first_row`.. of the call get the streams they would get in the whole call (a worker answering one shard)."""
    drawn = torch.randint(2**62, (first_row + rows,), generator=torch.Generator().manual_seed(seed))
    return [torch.Generator(device=device).manual_seed(s) for s in drawn[first_row:].tolist()]
