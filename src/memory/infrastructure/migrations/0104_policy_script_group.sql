-- A policy's script group (docs/adr/0112), as history windows have it (0213): 'han' when
-- at least a fifth of its non-space characters are CJK ideographs, else 'other'. A search's
-- relevance standardises the query's similarity within the group, because the model scores
-- a query higher against any text in its own script. Generated, so the projector and a
-- replay need not know about it.
ALTER TABLE policy_embeddings ADD COLUMN script_group text NOT NULL GENERATED ALWAYS AS (
    CASE WHEN length(regexp_replace(content, '[^㐀-䶿一-鿿豈-﫿]', '', 'g'))
              >= 0.2 * greatest(length(regexp_replace(content, '\s', '', 'g')), 1)
         THEN 'han' ELSE 'other' END
) STORED;
