-- A window's script group (docs/adr/0112): 'han' when at least a fifth of its non-space
-- characters are CJK ideographs, else 'other'. History search standardises a query's
-- similarities within each group, because the model scores a query higher against any text
-- in its own script. The sweep writes it with each window (memory.domain.relevance
-- `script_group`); rows written before this migration get the same rule here.
ALTER TABLE dw_message_embeddings ADD COLUMN script_group text NOT NULL DEFAULT 'other'
    CHECK (script_group IN ('han', 'other'));

UPDATE dw_message_embeddings
SET script_group = 'han'
WHERE length(regexp_replace(content, '[^㐀-䶿一-鿿豈-﫿]', '', 'g'))
      >= 0.2 * greatest(length(regexp_replace(content, '\s', '', 'g')), 1);
