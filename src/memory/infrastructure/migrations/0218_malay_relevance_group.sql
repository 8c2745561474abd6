-- The group a text's similarities are standardised within (docs/adr/0120, after 0112):
-- 'han' when at least a fifth of its non-space characters are CJK ideographs; else 'malay'
-- when more of its words are Malay function words than English ones; else 'other'. The
-- same rule as memory.domain.relevance `script_group` (a test keeps the word lists and the
-- answers equal). English questions about Malay conversations were standardised against
-- English text, which the model scores higher for them, and lost half their recall.
CREATE OR REPLACE FUNCTION memory_malay_words() RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ARRAY[
        'ada', 'akan', 'apa', 'atau', 'awak', 'bagaimana', 'bagi', 'baru', 'belum',
        'berapa', 'bila', 'boleh', 'buat', 'bulan', 'dah', 'dalam', 'dan', 'dapat', 'dari',
        'datang', 'dengan', 'di', 'dia', 'esok', 'hari', 'ini', 'itu', 'jangan', 'je',
        'juga', 'kami', 'kan', 'kasih', 'ke', 'keluar', 'kena', 'kenapa', 'kerana', 'kita',
        'lagi', 'lah', 'lama', 'macam', 'mahu', 'malam', 'mana', 'masih', 'masuk', 'mereka',
        'mesti', 'minggu', 'nak', 'ni', 'pagi', 'pergi', 'perlu', 'petang', 'pun', 'sahaja',
        'sampai', 'saya', 'sebab', 'semalam', 'semua', 'setiap', 'siapa', 'sila', 'sudah',
        'tadi', 'tahun', 'tak', 'tapi', 'terima', 'tetapi', 'tidak', 'tolong', 'tu',
        'untuk', 'ya', 'yang'
    ];

CREATE OR REPLACE FUNCTION memory_english_words() RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ARRAY[
        'a', 'an', 'and', 'are', 'at', 'be', 'been', 'but', 'by', 'can', 'cannot', 'could',
        'did', 'do', 'does', 'for', 'from', 'had', 'has', 'have', 'he', 'her', 'here',
        'him', 'how', 'i', 'if', 'in', 'is', 'it', 'its', 'me', 'my', 'no', 'not', 'of',
        'on', 'or', 'our', 'please', 'she', 'should', 'than', 'thanks', 'that', 'the',
        'their', 'them', 'then', 'there', 'these', 'they', 'this', 'those', 'to', 'us',
        'was', 'we', 'were', 'what', 'when', 'where', 'which', 'who', 'why', 'will', 'with',
        'would', 'you', 'your'
    ];

CREATE OR REPLACE FUNCTION memory_text_group(content text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN CASE
    WHEN length(regexp_replace(content, '[^㐀-䶿一-鿿豈-﫿]', '', 'g'))
         >= 0.2 * greatest(length(regexp_replace(content, '\s', '', 'g')), 1)
        THEN 'han'
    WHEN (SELECT count(*) FILTER (WHERE w = ANY (memory_malay_words()))
                 > count(*) FILTER (WHERE w = ANY (memory_english_words()))
          FROM (SELECT translate(m[1], 'ABCDEFGHIJKLMNOPQRSTUVWXYZ',
                                 'abcdefghijklmnopqrstuvwxyz') AS w
                FROM regexp_matches(content, '([A-Za-z]+)', 'g') AS m) AS words)
        THEN 'malay'
    ELSE 'other'
END;

-- History windows: the sweep writes the group with each window; rows written before get it
-- here (only Latin-script rows can change).
ALTER TABLE dw_message_embeddings
    DROP CONSTRAINT dw_message_embeddings_script_group_check,
    ADD CONSTRAINT dw_message_embeddings_script_group_check
        CHECK (script_group IN ('han', 'malay', 'other'));

UPDATE dw_message_embeddings
SET script_group = 'malay'
WHERE script_group = 'other' AND memory_text_group(content) = 'malay';

-- Policies: the group is generated from the content (0104); PostgreSQL 15 cannot change a
-- generated column's expression, so it is generated again by the new rule.
ALTER TABLE policy_embeddings DROP COLUMN script_group;
ALTER TABLE policy_embeddings ADD COLUMN script_group text NOT NULL
    GENERATED ALWAYS AS (memory_text_group(content)) STORED;
