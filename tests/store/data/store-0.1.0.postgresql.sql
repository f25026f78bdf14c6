--
-- PostgreSQL database dump
--


-- Dumped from database version 15.20 (Debian 15.20-0+deb12u1)
-- Dumped by pg_dump version 15.20 (Debian 15.20-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: alembic_version; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.alembic_version (
    version_num character varying(32) NOT NULL
);


--
-- Name: answers; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.answers (
    pair_id integer NOT NULL,
    side character varying(16) NOT NULL,
    model character varying(255),
    status integer,
    error text,
    text text NOT NULL,
    finish_reason character varying(32),
    prompt_tokens integer,
    completion_tokens integer,
    ttft double precision,
    duration double precision,
    attempts integer NOT NULL,
    tokens json,
    margins json,
    tool_calls json
);


--
-- Name: pairs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.pairs (
    id integer NOT NULL,
    run_id character varying(32) NOT NULL,
    key character varying(255) NOT NULL,
    seq integer NOT NULL,
    category character varying(255),
    endpoint character varying(64) NOT NULL,
    prompt text NOT NULL,
    request json NOT NULL,
    comparable boolean NOT NULL,
    outcome character varying(16) NOT NULL,
    similarity double precision,
    difflib_ratio double precision,
    first_char integer,
    first_token integer,
    length_ratio double precision,
    margin double precision,
    noise_outcome character varying(16),
    noise_similarity double precision,
    created_at timestamp with time zone NOT NULL,
    signals json,
    suggested character varying(16),
    priority integer DEFAULT 0 NOT NULL,
    claimed_by character varying(255),
    claimed_until timestamp with time zone,
    judge_verdict character varying(16),
    judge_wrong_side character varying(16),
    judge_reason text
);


--
-- Name: pairs_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.pairs_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: pairs_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.pairs_id_seq OWNED BY public.pairs.id;


--
-- Name: reviews; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.reviews (
    id integer NOT NULL,
    pair_id integer NOT NULL,
    reviewer character varying(255) NOT NULL,
    verdict character varying(16) NOT NULL,
    wrong_side character varying(16),
    note text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: reviews_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.reviews_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: reviews_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.reviews_id_seq OWNED BY public.reviews.id;


--
-- Name: run_counts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.run_counts (
    run_id character varying(32) NOT NULL,
    of character varying(16) NOT NULL,
    outcome character varying(16) NOT NULL,
    comparable boolean NOT NULL,
    pairs integer NOT NULL
);


--
-- Name: runs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.runs (
    id character varying(32) NOT NULL,
    kind character varying(16) NOT NULL,
    created_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone,
    settings json NOT NULL
);


--
-- Name: secrets; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.secrets (
    name character varying(64) NOT NULL,
    value text NOT NULL
);


--
-- Name: skipped; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.skipped (
    id integer NOT NULL,
    run_id character varying(32) NOT NULL,
    line integer NOT NULL,
    reason text NOT NULL
);


--
-- Name: skipped_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.skipped_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: skipped_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.skipped_id_seq OWNED BY public.skipped.id;


--
-- Name: pairs id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.pairs ALTER COLUMN id SET DEFAULT nextval('public.pairs_id_seq'::regclass);


--
-- Name: reviews id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.reviews ALTER COLUMN id SET DEFAULT nextval('public.reviews_id_seq'::regclass);


--
-- Name: skipped id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.skipped ALTER COLUMN id SET DEFAULT nextval('public.skipped_id_seq'::regclass);


--
-- Data for Name: alembic_version; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.alembic_version VALUES ('0004');


--
-- Data for Name: answers; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.answers VALUES (1, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Let us look at ball step by step — starting with the basics.

1. Start with the two quantities: 1.10 and 1.
2. Combine them: 1.10 + 1 = 2.10.
3. Check the result: it is consistent with the limit in the question.

The answer is 2.10.', 'stop', 60, 76, 0.03958926499996096, 0.04035037499994587, 1, '["Let", " us", " look", " at", " bal", "l", " step", " by", " step", " \u2014", " starting", " with", " the", " basics", ".", "\n\n", "1", ".", " Start", " with", " the", " two", " quantities", ":", " 1", ".", "1", "0", " and", " 1", ".", "\n", "2", ".", " Combine", " them", ":", " 1", ".", "1", "0", " +", " 1", " =", " 2", ".", "1", "0", ".", "\n", "3", ".", " Check", " the", " result", ":", " it", " is", " consistent", " with", " the", " limit", " in", " the", " question", ".", "\n\n", "The", " answer", " is", " 2", ".", "1", "0", "."]', '[3.5435, 2.5451, 2.2616, 2.162, 3.1741, 7.0945, 0.103, 2.0552, 0.0353, 4.0063, 7.053, 4.7079, 4.129, 2.9366, 2.8915, 0.1156, 1.9461, 5.2754, 7.0546, 2.2436, 6.6484, 5.8311, 2.6128, 3.5703, 6.6159, 7.3461, 3.2919, 3.8915, 4.8362, 6.805, 3.2183, 3.0679, 5.3292, 3.248, 5.3208, 3.8821, 2.3172, 7.2404, 2.2004, 5.6751, 7.3973, 2.02, 3.427, 7.0513, 2.3897, 6.4738, 4.7337, 2.3599, 4.3373, 0.1841, 2.4598, 4.2212, 3.7499, 3.2751, 0.1558, 1.9724, 2.2501, 3.0822, 2.2923, 6.0919, 3.1361, 6.996, 3.1281, 2.2887, 5.894, 3.5885, 0.1861, 2.2535, 2.1152, 3.435, 3.4297, 2.3923, 3.6169, 4.2178, 2.0922]', 'null');
INSERT INTO public.answers VALUES (1, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, 'Let us look at ball step by step — starting with the basics.

1. Start with the two quantities: 1.10 and 1.
2. Combine them: 1.10 + 1 = 2.10.
3.', 'stop', 60, 53, 0.03164152700003342, 0.03223211300002049, 1, '["Let", " us", " look", " at", " bal", "l", " step", " by", " step", " \u2014", " starting", " with", " the", " basics", ".", "\n\n", "1", ".", " Start", " with", " the", " two", " quantities", ":", " 1", ".", "1", "0", " and", " 1", ".", "\n", "2", ".", " Combine", " them", ":", " 1", ".", "1", "0", " +", " 1", " =", " 2", ".", "1", "0", ".", "\n", "3", "."]', '[3.5435, 2.5451, 2.2616, 2.162, 3.1741, 7.0945, 0.103, 2.0552, 0.0353, 4.0063, 7.053, 4.7079, 4.129, 2.9366, 2.8915, 0.1156, 1.9461, 5.2754, 7.0546, 2.2436, 6.6484, 5.8311, 2.6128, 3.5703, 6.6159, 7.3461, 3.2919, 3.8915, 4.8362, 6.805, 3.2183, 3.0679, 5.3292, 3.248, 5.3208, 3.8821, 2.3172, 7.2404, 2.2004, 5.6751, 7.3973, 2.02, 3.427, 7.0513, 2.3897, 6.4738, 4.7337, 2.3599, 4.3373, 0.1841, 2.4598, 4.2212]', 'null');
INSERT INTO public.answers VALUES (1, 'replica', 'Qwen/Qwen3-8B', 200, NULL, 'Let us look at ball step by step — starting with the basics.

1. Start with the two quantities: 1.10 and 1.
2. Combine them: 1.10 + 1 = 2.10.
3. Check the result: it is consistent with the limit in the question.

The answer is 2.10.', 'stop', 60, 76, 0.0424477310000384, 0.043179298000040944, 1, '["Let", " us", " look", " at", " bal", "l", " step", " by", " step", " \u2014", " starting", " with", " the", " basics", ".", "\n\n", "1", ".", " Start", " with", " the", " two", " quantities", ":", " 1", ".", "1", "0", " and", " 1", ".", "\n", "2", ".", " Combine", " them", ":", " 1", ".", "1", "0", " +", " 1", " =", " 2", ".", "1", "0", ".", "\n", "3", ".", " Check", " the", " result", ":", " it", " is", " consistent", " with", " the", " limit", " in", " the", " question", ".", "\n\n", "The", " answer", " is", " 2", ".", "1", "0", "."]', '[3.5435, 2.5451, 2.2616, 2.162, 3.1741, 7.0945, 0.103, 2.0552, 0.0353, 4.0063, 7.053, 4.7079, 4.129, 2.9366, 2.8915, 0.1156, 1.9461, 5.2754, 7.0546, 2.2436, 6.6484, 5.8311, 2.6128, 3.5703, 6.6159, 7.3461, 3.2919, 3.8915, 4.8362, 6.805, 3.2183, 3.0679, 5.3292, 3.248, 5.3208, 3.8821, 2.3172, 7.2404, 2.2004, 5.6751, 7.3973, 2.02, 3.427, 7.0513, 2.3897, 6.4738, 4.7337, 2.3599, 4.3373, 0.1841, 2.4598, 4.2212, 3.7499, 3.2751, 0.1558, 1.9724, 2.2501, 3.0822, 2.2923, 6.0919, 3.1361, 6.996, 3.1281, 2.2887, 5.894, 3.5885, 0.1861, 2.2535, 2.1152, 3.435, 3.4297, 2.3923, 3.6169, 4.2178, 2.0922]', 'null');
INSERT INTO public.answers VALUES (2, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Let us look at razzies step by step — starting with the basics.

The main risk is a careful goal that nobody checks. Most estimates put the figure at about 838 kilograms, although sources vary.

1. **Example**: Follow the careful effect first, then check the example again.
2. **Schedule**: Connect the careful step first, then check the schedule again.
3. **Level**: Drive the quick system first, then check the level again.
4. **Context**: Improve the complete choice first, then check the context again.
5. **Choice**: Improve the stable value first, then check the choice again.

In practice, roughly 79 percent of cases depend on the rate and the cost. In practice, roughly 16 percent of cases depend on the reason and the balance. When the value changes, the rate typically improves within 11 days.', 'stop', 52, 193, 0.01131073699997387, 0.022175408999999036, 1, '["Let", " us", " look", " at", " raz", "zie", "s", " step", " by", " step", " \u2014", " starting", " with", " the", " basics", ".", "\n\n", "The", " main", " risk", " is", " a", " careful", " goal", " that", " nobody", " checks", ".", " Most", " estimates", " put", " the", " figure", " at", " about", " 8", "3", "8", " kilograms", ",", " although", " sources", " vary", ".", "\n\n", "1", ".", " **", "Example", "**", ":", " Follow", " the", " careful", " effect", " first", ",", " then", " check", " the", " example", " again", ".", "\n", "2", ".", " **", "Schedule", "**", ":", " Connect", " the", " careful", " step", " first", ",", " then", " check", " the", " schedule", " again", ".", "\n", "3", ".", " **", "Level", "**", ":", " Drive", " the", " quick", " system", " first", ",", " then", " check", " the", " level", " again", ".", "\n", "4", ".", " **", "Context", "**", ":", " Improve", " the", " complete", " choice", " first", ",", " then", " check", " the", " context", " again", ".", "\n", "5", ".", " **", "Choice", "**", ":", " Improve", " the", " stable", " value", " first", ",", " then", " check", " the", " choice", " again", ".", "\n\n", "In", " practice", ",", " roughly", " 7", "9", " per", "cen", "t", " of", " cases", " depend", " on", " the", " rate", " and", " the", " cost", ".", " In", " practice", ",", " roughly", " 1", "6", " per", "cen", "t", " of", " cases", " depend", " on", " the", " reason", " and", " the", " balance", ".", " When", " the", " value", " changes", ",", " the", " rate", " typically", " improves", " within", " 1", "1", " days", "."]', '[2.7447, 5.6903, 5.8889, 3.1802, 2.4279, 4.9665, 4.2923, 0.0386, 3.6694, 0.1044, 4.8137, 2.656, 5.1253, 3.7963, 4.3448, 4.9058, 0.0603, 2.9939, 0.1837, 5.7766, 2.7744, 2.3988, 0.0521, 2.4399, 4.6973, 5.9491, 3.3067, 3.4913, 2.7779, 4.4273, 4.1436, 2.7526, 6.1378, 5.3428, 2.8931, 2.0008, 1.969, 2.9908, 4.5143, 5.7069, 2.7631, 2.6329, 7.3723, 3.5111, 3.3075, 5.4163, 2.0585, 3.9562, 6.0374, 5.1135, 3.6714, 2.1854, 3.2384, 2.4343, 3.2397, 0.0892, 4.8903, 2.06, 5.0365, 2.6977, 3.4604, 2.5222, 5.9884, 2.5067, 4.3591, 2.4893, 1.9243, 6.8446, 3.0805, 2.7258, 4.8436, 3.1821, 0.1175, 0.0592, 3.0272, 4.287, 2.155, 2.5896, 3.6026, 3.5087, 2.9755, 3.4562, 3.0383, 4.0526, 3.3458, 3.4301, 6.7128, 5.2282, 5.9578, 1.995, 2.3209, 0.0953, 2.0205, 3.0, 5.2041, 7.3707, 4.2689, 6.3183, 2.3297, 3.5045, 5.8739, 2.1961, 3.2371, 3.0548, 3.725, 2.5589, 7.3493, 2.4638, 2.105, 3.2378, 2.9549, 2.466, 0.0872, 6.1781, 2.0095, 6.6521, 2.1448, 4.025, 4.0484, 4.1933, 2.812, 7.4033, 2.4651, 3.0289, 1.9525, 5.7625, 4.2832, 7.0239, 2.4259, 3.8581, 3.0194, 0.0668, 4.0788, 5.5543, 5.4335, 4.5404, 4.7985, 4.0071, 1.9343, 1.9666, 3.2406, 3.8963, 5.0946, 0.1582, 4.0761, 5.1334, 2.4683, 3.6723, 3.2567, 7.0314, 2.1859, 3.1554, 2.6466, 4.474, 2.6166, 2.5698, 2.2574, 3.4371, 3.2529, 1.9699, 5.563, 7.2843, 0.0586, 4.0844, 2.1619, 3.2908, 4.1727, 3.0918, 1.9574, 2.0083, 2.4073, 2.0961, 7.0621, 2.304, 4.2629, 2.9019, 4.5862, 2.3745, 4.9964, 3.4201, 6.2414, 4.3246, 2.3511, 2.6686, 2.8772, 3.1007, 0.1465, 2.1102, 3.2107, 3.3144, 4.5954, 4.372]', 'null');
INSERT INTO public.answers VALUES (2, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, 'Let us look at razzies step by step — starting with the basics.

The main risk is a careful goal that nobody checks. Most estimates put the figure at about 838 kilograms, although sources vary.

1. **Example**: Follow the careful effect first, then check the example again.
2. **Schedule**: Connect the careful step first, then check the schedule again.
3. **Level**: Drive the quick system first, then check the level again.
4. **Context**: Improve the complete choice first, then check the context again.
5. **Choice**: Improve the stable value first, then check the choice again.

In practice, about 79 percent of cases depend on the rate and the cost. In practice, about 16 percent of cases depend on the reason and the balance. When the value changes, the rate usually improves within 11 days.', 'stop', 52, 193, 0.033712997999998606, 0.03625948699999526, 1, '["Let", " us", " look", " at", " raz", "zie", "s", " step", " by", " step", " \u2014", " starting", " with", " the", " basics", ".", "\n\n", "The", " main", " risk", " is", " a", " careful", " goal", " that", " nobody", " checks", ".", " Most", " estimates", " put", " the", " figure", " at", " about", " 8", "3", "8", " kilograms", ",", " although", " sources", " vary", ".", "\n\n", "1", ".", " **", "Example", "**", ":", " Follow", " the", " careful", " effect", " first", ",", " then", " check", " the", " example", " again", ".", "\n", "2", ".", " **", "Schedule", "**", ":", " Connect", " the", " careful", " step", " first", ",", " then", " check", " the", " schedule", " again", ".", "\n", "3", ".", " **", "Level", "**", ":", " Drive", " the", " quick", " system", " first", ",", " then", " check", " the", " level", " again", ".", "\n", "4", ".", " **", "Context", "**", ":", " Improve", " the", " complete", " choice", " first", ",", " then", " check", " the", " context", " again", ".", "\n", "5", ".", " **", "Choice", "**", ":", " Improve", " the", " stable", " value", " first", ",", " then", " check", " the", " choice", " again", ".", "\n\n", "In", " practice", ",", " about", " 7", "9", " per", "cen", "t", " of", " cases", " depend", " on", " the", " rate", " and", " the", " cost", ".", " In", " practice", ",", " about", " 1", "6", " per", "cen", "t", " of", " cases", " depend", " on", " the", " reason", " and", " the", " balance", ".", " When", " the", " value", " changes", ",", " the", " rate", " usually", " improves", " within", " 1", "1", " days", "."]', '[2.7447, 5.6903, 5.8889, 3.1802, 2.4279, 4.9665, 4.2923, 0.0386, 3.6694, 0.1044, 4.8137, 2.656, 5.1253, 3.7963, 4.3448, 4.9058, 0.0603, 2.9939, 0.1837, 5.7766, 2.7744, 2.3988, 0.0521, 2.4399, 4.6973, 5.9491, 3.3067, 3.4913, 2.7779, 4.4273, 4.1436, 2.7526, 6.1378, 5.3428, 2.8931, 2.0008, 1.969, 2.9908, 4.5143, 5.7069, 2.7631, 2.6329, 7.3723, 3.5111, 3.3075, 5.4163, 2.0585, 3.9562, 6.0374, 5.1135, 3.6714, 2.1854, 3.2384, 2.4343, 3.2397, 0.0892, 4.8903, 2.06, 5.0365, 2.6977, 3.4604, 2.5222, 5.9884, 2.5067, 4.3591, 2.4893, 1.9243, 6.8446, 3.0805, 2.7258, 4.8436, 3.1821, 0.1175, 0.0592, 3.0272, 4.287, 2.155, 2.5896, 3.6026, 3.5087, 2.9755, 3.4562, 3.0383, 4.0526, 3.3458, 3.4301, 6.7128, 5.2282, 5.9578, 1.995, 2.3209, 0.0953, 2.0205, 3.0, 5.2041, 7.3707, 4.2689, 6.3183, 2.3297, 3.5045, 5.8739, 2.1961, 3.2371, 3.0548, 3.725, 2.5589, 7.3493, 2.4638, 2.105, 3.2378, 2.9549, 2.466, 0.0872, 6.1781, 2.0095, 6.6521, 2.1448, 4.025, 4.0484, 4.1933, 2.812, 7.4033, 2.4651, 3.0289, 1.9525, 5.7625, 4.2832, 7.0239, 2.4259, 3.8581, 3.0194, 0.0668, 4.0788, 5.5543, 5.4335, 4.5404, 4.7985, 4.0071, 1.9343, 1.9666, 3.2406, 3.8963, 5.0946, 0.1222, 4.0761, 5.1334, 2.4683, 3.6723, 3.2567, 7.0314, 2.1859, 3.1554, 2.6466, 4.474, 2.6166, 2.5698, 2.2574, 3.4371, 3.2529, 1.9699, 5.563, 7.2843, 0.1124, 4.0844, 2.1619, 3.2908, 4.1727, 3.0918, 1.9574, 2.0083, 2.4073, 2.0961, 7.0621, 2.304, 4.2629, 2.9019, 4.5862, 2.3745, 4.9964, 3.4201, 6.2414, 4.3246, 2.3511, 2.6686, 2.8772, 2.0545, 0.1465, 2.1102, 3.2107, 3.3144, 4.5954, 4.372]', 'null');
INSERT INTO public.answers VALUES (2, 'replica', 'Qwen/Qwen3-8B', 200, NULL, 'Let us look at razzies step by step — starting with the basics.

The main risk is a careful goal that nobody checks. Most estimates put the figure at about 838 kilograms, although sources vary.

1. **Example**: Follow the careful effect first, then check the example again.
2. **Schedule**: Connect the careful step first, then check the schedule again.
3. **Level**: Drive the quick system first, then check the level again.
4. **Context**: Improve the complete choice first, then check the context again.
5. **Choice**: Improve the stable value first, then check the choice again.

In practice, roughly 79 percent of cases depend on the rate and the cost. In practice, roughly 16 percent of cases depend on the reason and the balance. When the value changes, the rate typically improves within 11 days.', 'stop', 52, 193, 0.028670269999963693, 0.03866184699995756, 1, '["Let", " us", " look", " at", " raz", "zie", "s", " step", " by", " step", " \u2014", " starting", " with", " the", " basics", ".", "\n\n", "The", " main", " risk", " is", " a", " careful", " goal", " that", " nobody", " checks", ".", " Most", " estimates", " put", " the", " figure", " at", " about", " 8", "3", "8", " kilograms", ",", " although", " sources", " vary", ".", "\n\n", "1", ".", " **", "Example", "**", ":", " Follow", " the", " careful", " effect", " first", ",", " then", " check", " the", " example", " again", ".", "\n", "2", ".", " **", "Schedule", "**", ":", " Connect", " the", " careful", " step", " first", ",", " then", " check", " the", " schedule", " again", ".", "\n", "3", ".", " **", "Level", "**", ":", " Drive", " the", " quick", " system", " first", ",", " then", " check", " the", " level", " again", ".", "\n", "4", ".", " **", "Context", "**", ":", " Improve", " the", " complete", " choice", " first", ",", " then", " check", " the", " context", " again", ".", "\n", "5", ".", " **", "Choice", "**", ":", " Improve", " the", " stable", " value", " first", ",", " then", " check", " the", " choice", " again", ".", "\n\n", "In", " practice", ",", " roughly", " 7", "9", " per", "cen", "t", " of", " cases", " depend", " on", " the", " rate", " and", " the", " cost", ".", " In", " practice", ",", " roughly", " 1", "6", " per", "cen", "t", " of", " cases", " depend", " on", " the", " reason", " and", " the", " balance", ".", " When", " the", " value", " changes", ",", " the", " rate", " typically", " improves", " within", " 1", "1", " days", "."]', '[2.7447, 5.6903, 5.8889, 3.1802, 2.4279, 4.9665, 4.2923, 0.0386, 3.6694, 0.1044, 4.8137, 2.656, 5.1253, 3.7963, 4.3448, 4.9058, 0.0603, 2.9939, 0.1837, 5.7766, 2.7744, 2.3988, 0.0521, 2.4399, 4.6973, 5.9491, 3.3067, 3.4913, 2.7779, 4.4273, 4.1436, 2.7526, 6.1378, 5.3428, 2.8931, 2.0008, 1.969, 2.9908, 4.5143, 5.7069, 2.7631, 2.6329, 7.3723, 3.5111, 3.3075, 5.4163, 2.0585, 3.9562, 6.0374, 5.1135, 3.6714, 2.1854, 3.2384, 2.4343, 3.2397, 0.0892, 4.8903, 2.06, 5.0365, 2.6977, 3.4604, 2.5222, 5.9884, 2.5067, 4.3591, 2.4893, 1.9243, 6.8446, 3.0805, 2.7258, 4.8436, 3.1821, 0.1175, 0.0592, 3.0272, 4.287, 2.155, 2.5896, 3.6026, 3.5087, 2.9755, 3.4562, 3.0383, 4.0526, 3.3458, 3.4301, 6.7128, 5.2282, 5.9578, 1.995, 2.3209, 0.0953, 2.0205, 3.0, 5.2041, 7.3707, 4.2689, 6.3183, 2.3297, 3.5045, 5.8739, 2.1961, 3.2371, 3.0548, 3.725, 2.5589, 7.3493, 2.4638, 2.105, 3.2378, 2.9549, 2.466, 0.0872, 6.1781, 2.0095, 6.6521, 2.1448, 4.025, 4.0484, 4.1933, 2.812, 7.4033, 2.4651, 3.0289, 1.9525, 5.7625, 4.2832, 7.0239, 2.4259, 3.8581, 3.0194, 0.0668, 4.0788, 5.5543, 5.4335, 4.5404, 4.7985, 4.0071, 1.9343, 1.9666, 3.2406, 3.8963, 5.0946, 0.1582, 4.0761, 5.1334, 2.4683, 3.6723, 3.2567, 7.0314, 2.1859, 3.1554, 2.6466, 4.474, 2.6166, 2.5698, 2.2574, 3.4371, 3.2529, 1.9699, 5.563, 7.2843, 0.0586, 4.0844, 2.1619, 3.2908, 4.1727, 3.0918, 1.9574, 2.0083, 2.4073, 2.0961, 7.0621, 2.304, 4.2629, 2.9019, 4.5862, 2.3745, 4.9964, 3.4201, 6.2414, 4.3246, 2.3511, 2.6686, 2.8772, 3.1007, 0.1465, 2.1102, 3.2107, 3.3144, 4.5954, 4.372]', 'null');
INSERT INTO public.answers VALUES (3, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Here is a short answer about restaurant — with the key points first.

A useful way to think about restaurant is as a resource with 8 parts. The broad part of restaurant is how it defines the schedule. In practice, roughly 86 percent of cases depend on the context and the rate. For example, a system of 65.6 days defines a central benefit.

1. **Choice**: Connect the quick signal first, then check the choice again.
2. **Balance**: Balance the small feature first, then check the balance again.
3. **Effect**: Change the clear context first, then check the effect again.
4. **Value**: Define the clear limit first, then check the value again.
5. **Rate**: Define the central measure first, then check the rate again.

Most estimates put the figure at about 77 meters, although sources vary. Importantly, the natural resource helps to connect the result.', 'stop', 52, 209, 0.03139771700000438, 0.032953465999980835, 1, '["Here", " is", " a", " short", " answer", " about", " res", "tau", "ran", "t", " \u2014", " with", " the", " key", " points", " first", ".", "\n\n", "A", " useful", " way", " to", " think", " about", " res", "tau", "ran", "t", " is", " as", " a", " resource", " with", " 8", " parts", ".", " The", " broad", " part", " of", " res", "tau", "ran", "t", " is", " how", " it", " defines", " the", " schedule", ".", " In", " practice", ",", " roughly", " 8", "6", " per", "cen", "t", " of", " cases", " depend", " on", " the", " context", " and", " the", " rate", ".", " For", " example", ",", " a", " system", " of", " 6", "5", ".", "6", " days", " defines", " a", " central", " benefit", ".", "\n\n", "1", ".", " **", "Choice", "**", ":", " Connect", " the", " quick", " signal", " first", ",", " then", " check", " the", " choice", " again", ".", "\n", "2", ".", " **", "Balance", "**", ":", " Balance", " the", " small", " feature", " first", ",", " then", " check", " the", " balance", " again", ".", "\n", "3", ".", " **", "Effect", "**", ":", " Change", " the", " clear", " context", " first", ",", " then", " check", " the", " effect", " again", ".", "\n", "4", ".", " **", "Value", "**", ":", " Define", " the", " clear", " limit", " first", ",", " then", " check", " the", " value", " again", ".", "\n", "5", ".", " **", "Rate", "**", ":", " Define", " the", " central", " measure", " first", ",", " then", " check", " the", " rate", " again", ".", "\n\n", "Most", " estimates", " put", " the", " figure", " at", " about", " 7", "7", " meters", ",", " although", " sources", " vary", ".", " Importantly", ",", " the", " natural", " resource", " helps", " to", " connect", " the", " result", "."]', '[3.2757, 3.254, 2.307, 4.3209, 2.3217, 0.0227, 6.4964, 2.6258, 4.1125, 2.8519, 3.8983, 3.313, 3.107, 2.411, 2.7104, 0.1026, 3.2648, 2.4644, 3.8109, 2.7362, 7.1555, 2.5513, 2.1888, 2.9157, 2.2057, 4.498, 3.5403, 5.4885, 2.207, 2.4454, 6.8547, 6.1919, 5.2489, 1.949, 3.1125, 7.1917, 2.9835, 3.9053, 3.3895, 2.8962, 7.1701, 2.6733, 6.2666, 4.5514, 2.8338, 2.4645, 4.2074, 1.9719, 4.6406, 4.7737, 5.279, 2.1199, 5.5846, 4.2043, 2.9367, 6.5538, 6.5379, 5.9346, 5.2363, 2.6232, 2.1678, 3.5353, 2.3336, 1.9261, 3.8048, 6.2265, 3.2638, 2.1076, 5.0012, 3.4678, 7.3439, 2.8941, 5.3928, 3.1268, 2.9996, 3.7442, 5.0048, 4.2936, 3.7392, 6.6969, 2.1943, 6.7175, 5.0044, 2.2367, 5.9767, 7.2365, 0.0578, 5.6263, 4.4693, 4.716, 5.1652, 2.2067, 7.3345, 4.2373, 4.9772, 2.1532, 6.025, 6.2108, 2.737, 1.9002, 2.6393, 4.1825, 2.1576, 3.6611, 5.4898, 5.8446, 2.4276, 2.4145, 2.7703, 2.2368, 3.4531, 2.2779, 3.5477, 2.769, 2.0156, 5.6339, 2.2632, 5.8646, 4.35, 2.8225, 4.6603, 2.1776, 5.477, 7.206, 0.1823, 5.1006, 6.0673, 7.4146, 3.1027, 7.4157, 1.9565, 2.6968, 4.0889, 2.1409, 5.0368, 0.1681, 3.3439, 3.2478, 5.935, 2.2035, 5.0679, 6.7415, 3.1255, 3.7696, 2.7006, 5.4724, 2.0449, 2.3757, 5.5147, 6.3641, 6.6737, 2.8901, 3.6143, 5.9858, 0.0314, 2.72, 2.6122, 4.377, 3.8731, 2.1399, 6.5962, 2.3327, 3.3575, 3.5033, 4.7224, 4.6011, 4.6769, 6.1899, 4.317, 2.8545, 2.6439, 0.1823, 3.806, 2.258, 2.3764, 3.1893, 2.116, 3.0981, 2.5868, 4.9204, 4.7998, 0.1841, 2.8689, 3.8409, 3.7763, 6.3394, 4.2963, 3.1852, 0.1646, 2.4976, 6.1531, 5.5795, 2.0227, 3.0442, 3.979, 4.449, 2.4817, 5.3098, 3.532, 2.3753, 5.452, 3.7737, 2.4719, 4.6406, 1.9312, 3.0554, 0.166, 2.6034]', 'null');
INSERT INTO public.answers VALUES (3, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, 'Here is a short answer about restaurant — with the key points first.

A useful way to think about restaurant is as a resource with 8 parts. The broad part of restaurant is how it defines the schedule. In practice, roughly 86 percent of cases depend on the context and the rate. For example, a system of 65.6 days defines a central benefit.

1. **Choice**: Connect the quick signal first, then check the choice again.
2. **Balance**: Balance the small feature first first, then check the balance again.
3. **Effect**: Change the clear context first, then check the effect again.
4. **Value**: Define the clear limit first, then check the value again.
5. **Rate**: Define the central measure first, then check the rate again.

Most estimates put the figure at about 77 meters, although sources vary. Importantly, the natural resource helps to connect the result.', 'stop', 52, 210, 0.053437369999983275, 0.058688624000012624, 1, '["Here", " is", " a", " short", " answer", " about", " res", "tau", "ran", "t", " \u2014", " with", " the", " key", " points", " first", ".", "\n\n", "A", " useful", " way", " to", " think", " about", " res", "tau", "ran", "t", " is", " as", " a", " resource", " with", " 8", " parts", ".", " The", " broad", " part", " of", " res", "tau", "ran", "t", " is", " how", " it", " defines", " the", " schedule", ".", " In", " practice", ",", " roughly", " 8", "6", " per", "cen", "t", " of", " cases", " depend", " on", " the", " context", " and", " the", " rate", ".", " For", " example", ",", " a", " system", " of", " 6", "5", ".", "6", " days", " defines", " a", " central", " benefit", ".", "\n\n", "1", ".", " **", "Choice", "**", ":", " Connect", " the", " quick", " signal", " first", ",", " then", " check", " the", " choice", " again", ".", "\n", "2", ".", " **", "Balance", "**", ":", " Balance", " the", " small", " feature", " first", " first", ",", " then", " check", " the", " balance", " again", ".", "\n", "3", ".", " **", "Effect", "**", ":", " Change", " the", " clear", " context", " first", ",", " then", " check", " the", " effect", " again", ".", "\n", "4", ".", " **", "Value", "**", ":", " Define", " the", " clear", " limit", " first", ",", " then", " check", " the", " value", " again", ".", "\n", "5", ".", " **", "Rate", "**", ":", " Define", " the", " central", " measure", " first", ",", " then", " check", " the", " rate", " again", ".", "\n\n", "Most", " estimates", " put", " the", " figure", " at", " about", " 7", "7", " meters", ",", " although", " sources", " vary", ".", " Importantly", ",", " the", " natural", " resource", " helps", " to", " connect", " the", " result", "."]', '[3.2757, 3.254, 2.307, 4.3209, 2.3217, 0.0227, 6.4964, 2.6258, 4.1125, 2.8519, 3.8983, 3.313, 3.107, 2.411, 2.7104, 0.1026, 3.2648, 2.4644, 3.8109, 2.7362, 7.1555, 2.5513, 2.1888, 2.9157, 2.2057, 4.498, 3.5403, 5.4885, 2.207, 2.4454, 6.8547, 6.1919, 5.2489, 1.949, 3.1125, 7.1917, 2.9835, 3.9053, 3.3895, 2.8962, 7.1701, 2.6733, 6.2666, 4.5514, 2.8338, 2.4645, 4.2074, 1.9719, 4.6406, 4.7737, 5.279, 2.1199, 5.5846, 4.2043, 2.9367, 6.5538, 6.5379, 5.9346, 5.2363, 2.6232, 2.1678, 3.5353, 2.3336, 1.9261, 3.8048, 6.2265, 3.2638, 2.1076, 5.0012, 3.4678, 7.3439, 2.8941, 5.3928, 3.1268, 2.9996, 3.7442, 5.0048, 4.2936, 3.7392, 6.6969, 2.1943, 6.7175, 5.0044, 2.2367, 5.9767, 7.2365, 0.0578, 5.6263, 4.4693, 4.716, 5.1652, 2.2067, 7.3345, 4.2373, 4.9772, 2.1532, 6.025, 6.2108, 2.737, 1.9002, 2.6393, 4.1825, 2.1576, 3.6611, 5.4898, 5.8446, 2.4276, 2.4145, 2.7703, 2.2368, 3.4531, 2.2779, 3.5477, 2.769, 2.0156, 5.6339, 2.2632, 1.9224, 2.9966, 5.1711, 2.4539, 2.5145, 3.2512, 2.3423, 2.3558, 3.8039, 4.0559, 4.6864, 2.9753, 4.8871, 2.1937, 3.1212, 2.9031, 7.3925, 0.0929, 4.6159, 6.0373, 2.5745, 2.0065, 5.1016, 7.2382, 2.6087, 7.3569, 2.947, 2.7375, 4.5115, 1.9115, 3.0083, 4.9781, 2.7405, 2.5527, 2.5219, 7.3303, 0.1458, 3.3714, 0.1167, 6.3043, 2.3519, 4.7808, 6.7926, 7.2409, 2.0365, 4.3273, 3.2118, 2.3658, 3.8122, 2.3299, 2.0031, 4.8385, 3.2865, 4.5839, 2.2732, 0.1389, 1.9215, 2.1682, 2.2496, 1.9584, 2.9643, 2.2858, 4.718, 5.5779, 1.9017, 5.1535, 3.6825, 7.1582, 3.7683, 2.7315, 4.8528, 4.4711, 3.3815, 3.6853, 5.405, 7.3519, 2.1388, 3.9782, 3.1632, 4.7627, 4.0968, 3.6955, 7.4065, 2.4956, 2.1828, 2.1567, 0.1612, 3.9089, 3.6564, 2.1164, 5.7739, 2.9496]', 'null');
INSERT INTO public.answers VALUES (3, 'replica', 'Qwen/Qwen3-8B', 200, NULL, 'Here is a short answer about restaurant — with the key points first.

A useful way to think about restaurant is as a resource with 8 parts. The broad part of restaurant is how it defines the schedule. In practice, roughly 86 percent of cases depend on the context and the rate. For example, a system of 65.6 days defines a central benefit.

1. **Choice**: Connect the quick signal first, then check the choice again.
2. **Balance**: Balance the small feature first, then check the balance again.
3. **Effect**: Change the clear context first, then check the effect again.
4. **Value**: Define the clear limit first, then check the value again.
5. **Rate**: Define the central measure first, then check the rate again.

Most estimates put the figure at about 77 meters, although sources vary. Importantly, the natural resource helps to connect the result.', 'stop', 52, 209, 0.017004338999981883, 0.038942899999995007, 1, '["Here", " is", " a", " short", " answer", " about", " res", "tau", "ran", "t", " \u2014", " with", " the", " key", " points", " first", ".", "\n\n", "A", " useful", " way", " to", " think", " about", " res", "tau", "ran", "t", " is", " as", " a", " resource", " with", " 8", " parts", ".", " The", " broad", " part", " of", " res", "tau", "ran", "t", " is", " how", " it", " defines", " the", " schedule", ".", " In", " practice", ",", " roughly", " 8", "6", " per", "cen", "t", " of", " cases", " depend", " on", " the", " context", " and", " the", " rate", ".", " For", " example", ",", " a", " system", " of", " 6", "5", ".", "6", " days", " defines", " a", " central", " benefit", ".", "\n\n", "1", ".", " **", "Choice", "**", ":", " Connect", " the", " quick", " signal", " first", ",", " then", " check", " the", " choice", " again", ".", "\n", "2", ".", " **", "Balance", "**", ":", " Balance", " the", " small", " feature", " first", ",", " then", " check", " the", " balance", " again", ".", "\n", "3", ".", " **", "Effect", "**", ":", " Change", " the", " clear", " context", " first", ",", " then", " check", " the", " effect", " again", ".", "\n", "4", ".", " **", "Value", "**", ":", " Define", " the", " clear", " limit", " first", ",", " then", " check", " the", " value", " again", ".", "\n", "5", ".", " **", "Rate", "**", ":", " Define", " the", " central", " measure", " first", ",", " then", " check", " the", " rate", " again", ".", "\n\n", "Most", " estimates", " put", " the", " figure", " at", " about", " 7", "7", " meters", ",", " although", " sources", " vary", ".", " Importantly", ",", " the", " natural", " resource", " helps", " to", " connect", " the", " result", "."]', '[3.2757, 3.254, 2.307, 4.3209, 2.3217, 0.0227, 6.4964, 2.6258, 4.1125, 2.8519, 3.8983, 3.313, 3.107, 2.411, 2.7104, 0.1026, 3.2648, 2.4644, 3.8109, 2.7362, 7.1555, 2.5513, 2.1888, 2.9157, 2.2057, 4.498, 3.5403, 5.4885, 2.207, 2.4454, 6.8547, 6.1919, 5.2489, 1.949, 3.1125, 7.1917, 2.9835, 3.9053, 3.3895, 2.8962, 7.1701, 2.6733, 6.2666, 4.5514, 2.8338, 2.4645, 4.2074, 1.9719, 4.6406, 4.7737, 5.279, 2.1199, 5.5846, 4.2043, 2.9367, 6.5538, 6.5379, 5.9346, 5.2363, 2.6232, 2.1678, 3.5353, 2.3336, 1.9261, 3.8048, 6.2265, 3.2638, 2.1076, 5.0012, 3.4678, 7.3439, 2.8941, 5.3928, 3.1268, 2.9996, 3.7442, 5.0048, 4.2936, 3.7392, 6.6969, 2.1943, 6.7175, 5.0044, 2.2367, 5.9767, 7.2365, 0.0578, 5.6263, 4.4693, 4.716, 5.1652, 2.2067, 7.3345, 4.2373, 4.9772, 2.1532, 6.025, 6.2108, 2.737, 1.9002, 2.6393, 4.1825, 2.1576, 3.6611, 5.4898, 5.8446, 2.4276, 2.4145, 2.7703, 2.2368, 3.4531, 2.2779, 3.5477, 2.769, 2.0156, 5.6339, 2.2632, 5.8646, 4.35, 2.8225, 4.6603, 2.1776, 5.477, 7.206, 0.1823, 5.1006, 6.0673, 7.4146, 3.1027, 7.4157, 1.9565, 2.6968, 4.0889, 2.1409, 5.0368, 0.1681, 3.3439, 3.2478, 5.935, 2.2035, 5.0679, 6.7415, 3.1255, 3.7696, 2.7006, 5.4724, 2.0449, 2.3757, 5.5147, 6.3641, 6.6737, 2.8901, 3.6143, 5.9858, 0.0314, 2.72, 2.6122, 4.377, 3.8731, 2.1399, 6.5962, 2.3327, 3.3575, 3.5033, 4.7224, 4.6011, 4.6769, 6.1899, 4.317, 2.8545, 2.6439, 0.1823, 3.806, 2.258, 2.3764, 3.1893, 2.116, 3.0981, 2.5868, 4.9204, 4.7998, 0.1841, 2.8689, 3.8409, 3.7763, 6.3394, 4.2963, 3.1852, 0.1646, 2.4976, 6.1531, 5.5795, 2.0227, 3.0442, 3.979, 4.449, 2.4817, 5.3098, 3.532, 2.3753, 5.452, 3.7737, 2.4719, 4.6406, 1.9312, 3.0554, 0.166, 2.6034]', 'null');
INSERT INTO public.answers VALUES (4, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Let us look at function step by step — starting with the basics.

```python
def function(items):
    """Sum the lengths of the first 61 items."""
    total = 0
    for item in items[:61]:
        total += len(str(item))
    return total
```

The main risk is a direct problem that nobody checks. It is often helpful to define the resource before looking at the source.', 'stop', 42, 105, 0.016639598999972804, 0.01759645399999954, 1, '["Let", " us", " look", " at", " function", " step", " by", " step", " \u2014", " starting", " with", " the", " basics", ".", "\n\n", "```", "python", "\n", "def", " function", "(", "items", ")", ":", "\n", "   ", " \"", "\"", "\"", "Sum", " the", " lengths", " of", " the", " first", " 6", "1", " items", ".", "\"", "\"", "\"", "\n", "   ", " total", " =", " 0", "\n", "   ", " for", " item", " in", " items", "[", ":", "6", "1", "]", ":", "\n", "    ", "   ", " total", " +", "=", " len", "(", "str", "(", "item", ")", ")", "\n", "   ", " return", " total", "\n", "```", "\n\n", "The", " main", " risk", " is", " a", " direct", " problem", " that", " nobody", " checks", ".", " It", " is", " often", " helpful", " to", " define", " the", " resource", " before", " looking", " at", " the", " source", "."]', '[1.967, 4.2455, 7.1447, 2.5029, 4.8996, 4.7349, 2.236, 0.1672, 2.2783, 1.9145, 2.728, 5.7887, 2.182, 4.7813, 0.1104, 7.0649, 2.0358, 4.2865, 2.0517, 2.1988, 7.1051, 2.874, 3.6713, 2.7929, 0.1445, 4.0409, 2.3964, 2.0519, 1.9181, 1.9088, 5.6044, 2.2926, 3.0417, 3.3094, 2.9385, 3.001, 2.5604, 6.2539, 1.9122, 3.5486, 3.2041, 5.9307, 0.1413, 3.8302, 2.1178, 2.8998, 2.455, 0.0232, 4.2961, 2.9058, 7.4175, 5.5382, 4.2139, 2.3801, 3.9547, 3.3878, 5.91, 2.7557, 2.0614, 3.6808, 4.7412, 2.1986, 2.4907, 4.155, 5.216, 2.701, 3.7731, 5.618, 2.1857, 4.0809, 2.3989, 3.5003, 6.545, 2.9902, 2.4597, 2.6765, 2.6434, 5.9387, 6.7865, 4.809, 0.0694, 4.9349, 1.9404, 7.3451, 6.1178, 4.2595, 2.3928, 2.4459, 3.9449, 5.7284, 3.5899, 4.9843, 1.9411, 1.9097, 4.2768, 6.448, 1.9794, 4.0278, 1.9391, 2.0548, 7.4017, 2.5918, 6.3057, 2.1488]', 'null');
INSERT INTO public.answers VALUES (4, 'candidate', 'Qwen/Qwen3-8B-FP8', 500, 'HTTP 500: {"error":{"message":"Simulated engine failure (shadowdiff simulate --fault error_500).","type":"InternalServerError","param":null,"code":500}}', '', NULL, NULL, NULL, NULL, NULL, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (7, 'replica', 'Qwen/Qwen3-8B', 200, NULL, 'Summary — the text is about summarize, sentences, city. It gives a figure of 2.1 and argues that the example matters. In practice, roughly 25 percent of cases depend on the choice and the outcome. It is often helpful to define the outcome before looking at the design.', 'stop', 83, 65, 0.0048220289999676424, 0.005355056999974295, 1, '["Summary", " \u2014", " the", " text", " is", " about", " sum", "mar", "ize", ",", " sentence", "s", ",", " city", ".", " It", " give", "s", " a", " figure", " of", " 2", ".", "1", " and", " argues", " that", " the", " example", " matters", ".", " In", " practice", ",", " roughly", " 2", "5", " per", "cen", "t", " of", " cases", " depend", " on", " the", " choice", " and", " the", " outcome", ".", " It", " is", " often", " helpful", " to", " define", " the", " outcome", " before", " looking", " at", " the", " design", "."]', '[2.1257, 5.6571, 3.6807, 4.7318, 5.5348, 4.6233, 4.3294, 3.0582, 2.1376, 3.7291, 5.2868, 5.6499, 3.5519, 5.6109, 3.0839, 2.3226, 4.8162, 5.3134, 3.938, 2.4309, 2.3623, 4.4406, 6.9691, 2.2285, 4.9491, 7.3989, 2.473, 2.8313, 2.2998, 2.2793, 2.2392, 6.62, 1.9126, 1.9716, 2.1114, 3.2368, 6.0516, 7.1918, 2.3612, 1.9582, 7.4134, 5.4916, 2.7657, 7.2239, 4.4018, 1.9181, 3.0508, 4.4, 0.0677, 3.4788, 2.435, 2.5108, 0.1235, 3.8183, 5.4091, 4.9182, 2.1902, 0.1119, 2.5023, 2.1592, 2.8286, 6.6913, 2.9942, 5.8475]', 'null');
INSERT INTO public.answers VALUES (4, 'replica', 'Qwen/Qwen3-8B', 200, NULL, 'Let us look at function step by step — starting with the basics.

```python
def function(items):
    """Sum the lengths of the first 61 items."""
    total = 0
    for item in items[:61]:
        total += len(str(item))
    return total
```

The main risk is a direct problem that nobody checks. It is often helpful to define the resource before looking at the source.', 'stop', 42, 105, 0.006992670000045109, 0.008000002000017048, 1, '["Let", " us", " look", " at", " function", " step", " by", " step", " \u2014", " starting", " with", " the", " basics", ".", "\n\n", "```", "python", "\n", "def", " function", "(", "items", ")", ":", "\n", "   ", " \"", "\"", "\"", "Sum", " the", " lengths", " of", " the", " first", " 6", "1", " items", ".", "\"", "\"", "\"", "\n", "   ", " total", " =", " 0", "\n", "   ", " for", " item", " in", " items", "[", ":", "6", "1", "]", ":", "\n", "    ", "   ", " total", " +", "=", " len", "(", "str", "(", "item", ")", ")", "\n", "   ", " return", " total", "\n", "```", "\n\n", "The", " main", " risk", " is", " a", " direct", " problem", " that", " nobody", " checks", ".", " It", " is", " often", " helpful", " to", " define", " the", " resource", " before", " looking", " at", " the", " source", "."]', '[1.967, 4.2455, 7.1447, 2.5029, 4.8996, 4.7349, 2.236, 0.1672, 2.2783, 1.9145, 2.728, 5.7887, 2.182, 4.7813, 0.1104, 7.0649, 2.0358, 4.2865, 2.0517, 2.1988, 7.1051, 2.874, 3.6713, 2.7929, 0.1445, 4.0409, 2.3964, 2.0519, 1.9181, 1.9088, 5.6044, 2.2926, 3.0417, 3.3094, 2.9385, 3.001, 2.5604, 6.2539, 1.9122, 3.5486, 3.2041, 5.9307, 0.1413, 3.8302, 2.1178, 2.8998, 2.455, 0.0232, 4.2961, 2.9058, 7.4175, 5.5382, 4.2139, 2.3801, 3.9547, 3.3878, 5.91, 2.7557, 2.0614, 3.6808, 4.7412, 2.1986, 2.4907, 4.155, 5.216, 2.701, 3.7731, 5.618, 2.1857, 4.0809, 2.3989, 3.5003, 6.545, 2.9902, 2.4597, 2.6765, 2.6434, 5.9387, 6.7865, 4.809, 0.0694, 4.9349, 1.9404, 7.3451, 6.1178, 4.2595, 2.3928, 2.4459, 3.9449, 5.7284, 3.5899, 4.9843, 1.9411, 1.9097, 4.2768, 6.448, 1.9794, 4.0278, 1.9391, 2.0548, 7.4017, 2.5918, 6.3057, 2.1488]', 'null');
INSERT INTO public.answers VALUES (5, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Here is a short answer about returns — with the key points first.

```sql
SELECT category, COUNT(*) AS total
FROM returns
WHERE value > 29
GROUP BY category
ORDER BY total DESC;
```

When the choice changes, the outcome typically connects within 24 weeks. It is often helpful to reduce the plan before looking at the structure.', 'stop', 50, 88, 0.01997153000002072, 0.02067981600004032, 1, '["Here", " is", " a", " short", " answer", " about", " return", "s", " \u2014", " with", " the", " key", " points", " first", ".", "\n\n", "```", "sql", "\n", "SELECT", " cat", "ego", "ry", ",", " COUNT", "(", "*", ")", " A", "S", " total", "\n", "FROM", " return", "s", "\n", "WHERE", " value", " >", " 2", "9", "\n", "GROUP", " BY", " cat", "ego", "ry", "\n", "ORDER", " BY", " total", " D", "E", "S", "C", ";", "\n", "```", "\n\n", "When", " the", " choice", " changes", ",", " the", " outcome", " typically", " connects", " within", " 2", "4", " weeks", ".", " It", " is", " often", " helpful", " to", " reduce", " the", " plan", " before", " looking", " at", " the", " structure", "."]', '[2.5021, 3.3569, 3.1454, 2.058, 2.274, 0.1451, 5.7452, 3.2799, 4.706, 3.5093, 3.4536, 0.083, 2.175, 0.0661, 3.3425, 4.2416, 2.2429, 3.9696, 0.0224, 6.3144, 2.662, 6.609, 2.4493, 7.3388, 5.3263, 3.9552, 1.9015, 2.7075, 6.967, 3.3293, 3.0303, 2.6288, 3.1921, 5.614, 4.8583, 0.1492, 3.0266, 4.8172, 2.8185, 4.0118, 3.7208, 0.1232, 1.9208, 3.9827, 3.0806, 2.8644, 3.596, 6.1712, 2.9244, 4.2679, 6.926, 7.4043, 3.7078, 6.582, 2.3536, 5.2784, 6.6504, 2.9683, 0.0292, 3.1768, 3.9786, 2.2546, 3.2107, 4.6741, 6.6319, 5.4142, 0.1102, 2.1212, 5.0045, 4.0952, 5.11, 2.7435, 6.5827, 2.8366, 3.6722, 0.1176, 2.2176, 3.6972, 3.1752, 6.64, 7.2037, 2.201, 2.6377, 1.9757, 4.3404, 3.4736, 2.4395]', 'null');
INSERT INTO public.answers VALUES (5, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, 'Here is a short answer about returns — with the key points first.

```sql
SELECT category, COUNT(*) AS total
FROM returns
WHERE value > 29
GROUP BY category
ORDER BY total DESC;
```

When the choice changes, the outcome typically connects within 24 weeks.', 'stop', 50, 74, 0.012932234999993852, 0.013515428999994583, 1, '["Here", " is", " a", " short", " answer", " about", " return", "s", " \u2014", " with", " the", " key", " points", " first", ".", "\n\n", "```", "sql", "\n", "SELECT", " cat", "ego", "ry", ",", " COUNT", "(", "*", ")", " A", "S", " total", "\n", "FROM", " return", "s", "\n", "WHERE", " value", " >", " 2", "9", "\n", "GROUP", " BY", " cat", "ego", "ry", "\n", "ORDER", " BY", " total", " D", "E", "S", "C", ";", "\n", "```", "\n\n", "When", " the", " choice", " changes", ",", " the", " outcome", " typically", " connects", " within", " 2", "4", " weeks", "."]', '[2.5021, 3.3569, 3.1454, 2.058, 2.274, 0.1451, 5.7452, 3.2799, 4.706, 3.5093, 3.4536, 0.083, 2.175, 0.0661, 3.3425, 4.2416, 2.2429, 3.9696, 0.0224, 6.3144, 2.662, 6.609, 2.4493, 7.3388, 5.3263, 3.9552, 1.9015, 2.7075, 6.967, 3.3293, 3.0303, 2.6288, 3.1921, 5.614, 4.8583, 0.1492, 3.0266, 4.8172, 2.8185, 4.0118, 3.7208, 0.1232, 1.9208, 3.9827, 3.0806, 2.8644, 3.596, 6.1712, 2.9244, 4.2679, 6.926, 7.4043, 3.7078, 6.582, 2.3536, 5.2784, 6.6504, 2.9683, 0.0292, 3.1768, 3.9786, 2.2546, 3.2107, 4.6741, 6.6319, 5.4142, 0.1102, 2.1212, 5.0045, 4.0952, 5.11, 2.7435, 6.5827]', 'null');
INSERT INTO public.answers VALUES (5, 'replica', 'Qwen/Qwen3-8B', 200, NULL, 'Here is a short answer about returns — with the key points first.

```sql
SELECT category, COUNT(*) AS total
FROM returns
WHERE value > 29
GROUP BY category
ORDER BY total DESC;
```

When the choice changes, the outcome typically connects within 24 weeks. It is often helpful to reduce the plan before looking at the structure.', 'stop', 50, 88, 0.006499499000028663, 0.007252902000004724, 1, '["Here", " is", " a", " short", " answer", " about", " return", "s", " \u2014", " with", " the", " key", " points", " first", ".", "\n\n", "```", "sql", "\n", "SELECT", " cat", "ego", "ry", ",", " COUNT", "(", "*", ")", " A", "S", " total", "\n", "FROM", " return", "s", "\n", "WHERE", " value", " >", " 2", "9", "\n", "GROUP", " BY", " cat", "ego", "ry", "\n", "ORDER", " BY", " total", " D", "E", "S", "C", ";", "\n", "```", "\n\n", "When", " the", " choice", " changes", ",", " the", " outcome", " typically", " connects", " within", " 2", "4", " weeks", ".", " It", " is", " often", " helpful", " to", " reduce", " the", " plan", " before", " looking", " at", " the", " structure", "."]', '[2.5021, 3.3569, 3.1454, 2.058, 2.274, 0.1451, 5.7452, 3.2799, 4.706, 3.5093, 3.4536, 0.083, 2.175, 0.0661, 3.3425, 4.2416, 2.2429, 3.9696, 0.0224, 6.3144, 2.662, 6.609, 2.4493, 7.3388, 5.3263, 3.9552, 1.9015, 2.7075, 6.967, 3.3293, 3.0303, 2.6288, 3.1921, 5.614, 4.8583, 0.1492, 3.0266, 4.8172, 2.8185, 4.0118, 3.7208, 0.1232, 1.9208, 3.9827, 3.0806, 2.8644, 3.596, 6.1712, 2.9244, 4.2679, 6.926, 7.4043, 3.7078, 6.582, 2.3536, 5.2784, 6.6504, 2.9683, 0.0292, 3.1768, 3.9786, 2.2546, 3.2107, 4.6741, 6.6319, 5.4142, 0.1102, 2.1212, 5.0045, 4.0952, 5.11, 2.7435, 6.5827, 2.8366, 3.6722, 0.1176, 2.2176, 3.6972, 3.1752, 6.64, 7.2037, 2.201, 2.6377, 1.9757, 4.3404, 3.4736, 2.4395]', 'null');
INSERT INTO public.answers VALUES (13, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Label: Positive

Confidence: 0.68. A useful way to think about sentiment is as a method with 3 parts.', 'stop', 61, 31, 0.014573391999988417, 0.014817398999980469, 1, '["Label", ":", " Pos", "iti", "ve", "\n\n", "Confidence", ":", " 0", ".", "6", "8", ".", " A", " useful", " way", " to", " think", " about", " sen", "time", "nt", " is", " as", " a", " method", " with", " 3", " parts", "."]', '[5.9744, 5.414, 3.1522, 3.9384, 2.6847, 2.1139, 3.1979, 3.6625, 5.2468, 5.5615, 3.9426, 2.2812, 3.4539, 5.8846, 5.3472, 2.9265, 5.192, 2.8711, 2.7125, 6.5271, 2.2608, 2.8044, 5.0861, 3.5152, 2.5947, 4.8098, 2.1601, 5.0243, 5.3583, 2.4725]', 'null');
INSERT INTO public.answers VALUES (28, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Summary — the text is about summarize, main, argument. It gives a figure of 54 and argues that the method matters. When the plan changes, the step typically limits within 22 minutes. For example, a risk of 87.4 kilometers defines a recent measure.', 'stop', NULL, NULL, 0.007198501999994278, 0.00722238200000902, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (6, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Let us look at function step by step — starting with the basics.

```javascript
function implement(items) {
  let total = 0;
  for (const item of items.slice(0, 19)) {
    total += String(item).length;
  }
  return total;
}
```

The main risk is a recent idea that nobody checks. In short, the simple cost helps to guide the detail.', 'stop', 44, 102, 0.00837847400003966, 0.009574610000015582, 1, '["Let", " us", " look", " at", " function", " step", " by", " step", " \u2014", " starting", " with", " the", " basics", ".", "\n\n", "```", "javascript", "\n", "function", " imp", "lem", "ent", "(", "items", ")", " {", "\n", " ", " let", " total", " =", " 0", ";", "\n", " ", " for", " (", "const", " item", " of", " items", ".", "sli", "ce", "(", "0", ",", " 1", "9", ")", ")", " {", "\n", "   ", " total", " +", "=", " String", "(", "item", ")", ".", "len", "gth", ";", "\n", " ", " }", "\n", " ", " return", " total", ";", "\n", "}", "\n", "```", "\n\n", "The", " main", " risk", " is", " a", " recent", " idea", " that", " nobody", " checks", ".", " In", " short", ",", " the", " simple", " cost", " helps", " to", " guide", " the", " detail", "."]', '[4.1521, 3.2643, 6.3105, 6.5077, 3.5571, 0.1109, 3.57, 2.4707, 6.2796, 1.9469, 2.6626, 4.459, 1.9661, 3.9741, 6.4402, 4.4867, 2.9012, 2.4135, 1.9291, 3.2615, 2.1245, 5.6392, 3.4058, 2.4274, 5.0365, 3.265, 4.5548, 3.1376, 7.054, 5.1694, 6.8662, 2.2806, 5.2756, 3.1003, 2.4286, 3.4252, 2.306, 3.1605, 2.414, 2.3949, 6.8124, 3.2531, 5.2363, 2.4758, 5.8472, 6.8089, 2.7638, 3.9164, 4.102, 6.5908, 3.3931, 1.9702, 0.0483, 5.2385, 6.9271, 4.4371, 4.4269, 1.9614, 2.9208, 6.7021, 2.171, 4.2103, 2.1966, 2.3336, 2.113, 0.0327, 2.093, 6.8247, 0.1535, 4.9783, 4.6347, 3.1407, 1.9496, 2.4767, 3.3615, 0.0896, 3.3296, 3.9601, 1.9227, 3.0929, 2.0793, 1.9052, 7.1435, 2.2278, 6.2319, 2.0069, 2.5073, 2.6324, 2.9439, 3.9036, 2.7571, 4.0336, 2.382, 3.6567, 2.8047, 3.3097, 2.2811, 2.9225, 4.0045, 4.384, 3.701]', 'null');
INSERT INTO public.answers VALUES (6, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, 'Let us look at function step by step — starting with the basics.

```javascript
function implement(items) {
  let total = 0;
  for (const item of items.slice(0, 19)) {
    total += String(item).length;

  }
  return total;

}
```
The main risk is a recent idea that nobody checks. In short, the simple cost helps to guide the detail.', 'stop', 44, 102, 0.020562901999994665, 0.02133654800002205, 1, '["Let", " us", " look", " at", " function", " step", " by", " step", " \u2014", " starting", " with", " the", " basics", ".", "\n\n", "```", "javascript", "\n", "function", " imp", "lem", "ent", "(", "items", ")", " {", "\n", " ", " let", " total", " =", " 0", ";", "\n", " ", " for", " (", "const", " item", " of", " items", ".", "sli", "ce", "(", "0", ",", " 1", "9", ")", ")", " {", "\n", "   ", " total", " +", "=", " String", "(", "item", ")", ".", "len", "gth", ";", "\n\n", " ", " }", "\n", " ", " return", " total", ";", "\n\n", "}", "\n", "```", "\n", "The", " main", " risk", " is", " a", " recent", " idea", " that", " nobody", " checks", ".", " In", " short", ",", " the", " simple", " cost", " helps", " to", " guide", " the", " detail", "."]', '[4.1521, 3.2643, 6.3105, 6.5077, 3.5571, 0.1109, 3.57, 2.4707, 6.2796, 1.9469, 2.6626, 4.459, 1.9661, 3.9741, 6.4402, 4.4867, 2.9012, 2.4135, 1.9291, 3.2615, 2.1245, 5.6392, 3.4058, 2.4274, 5.0365, 3.265, 4.5548, 3.1376, 7.054, 5.1694, 6.8662, 2.2806, 5.2756, 3.1003, 2.4286, 3.4252, 2.306, 3.1605, 2.414, 2.3949, 6.8124, 3.2531, 5.2363, 2.4758, 5.8472, 6.8089, 2.7638, 3.9164, 4.102, 6.5908, 3.3931, 1.9702, 0.0483, 5.2385, 6.9271, 4.4371, 4.4269, 1.9614, 2.9208, 6.7021, 2.171, 4.2103, 2.1966, 2.3336, 2.113, 0.0547, 2.093, 6.8247, 0.1535, 4.9783, 4.6347, 3.1407, 1.9496, 4.0923, 3.3615, 0.0896, 3.3296, 7.0245, 1.9227, 3.0929, 2.0793, 1.9052, 7.1435, 2.2278, 6.2319, 2.0069, 2.5073, 2.6324, 2.9439, 3.9036, 2.7571, 4.0336, 2.382, 3.6567, 2.8047, 3.3097, 2.2811, 2.9225, 4.0045, 4.384, 3.701]', 'null');
INSERT INTO public.answers VALUES (6, 'replica', 'Qwen/Qwen3-8B', 200, NULL, 'Let us look at function step by step — starting with the basics.

```javascript
function implement(items) {
  let total = 0;
  for (const item of items.slice(0, 19)) {
    total += String(item).length;
  }
  return total;
}
```

The main risk is a recent idea that nobody checks. In short, the simple cost helps to guide the detail.', 'stop', 44, 102, 0.013293014999987918, 0.014071687000011934, 1, '["Let", " us", " look", " at", " function", " step", " by", " step", " \u2014", " starting", " with", " the", " basics", ".", "\n\n", "```", "javascript", "\n", "function", " imp", "lem", "ent", "(", "items", ")", " {", "\n", " ", " let", " total", " =", " 0", ";", "\n", " ", " for", " (", "const", " item", " of", " items", ".", "sli", "ce", "(", "0", ",", " 1", "9", ")", ")", " {", "\n", "   ", " total", " +", "=", " String", "(", "item", ")", ".", "len", "gth", ";", "\n", " ", " }", "\n", " ", " return", " total", ";", "\n", "}", "\n", "```", "\n\n", "The", " main", " risk", " is", " a", " recent", " idea", " that", " nobody", " checks", ".", " In", " short", ",", " the", " simple", " cost", " helps", " to", " guide", " the", " detail", "."]', '[4.1521, 3.2643, 6.3105, 6.5077, 3.5571, 0.1109, 3.57, 2.4707, 6.2796, 1.9469, 2.6626, 4.459, 1.9661, 3.9741, 6.4402, 4.4867, 2.9012, 2.4135, 1.9291, 3.2615, 2.1245, 5.6392, 3.4058, 2.4274, 5.0365, 3.265, 4.5548, 3.1376, 7.054, 5.1694, 6.8662, 2.2806, 5.2756, 3.1003, 2.4286, 3.4252, 2.306, 3.1605, 2.414, 2.3949, 6.8124, 3.2531, 5.2363, 2.4758, 5.8472, 6.8089, 2.7638, 3.9164, 4.102, 6.5908, 3.3931, 1.9702, 0.0483, 5.2385, 6.9271, 4.4371, 4.4269, 1.9614, 2.9208, 6.7021, 2.171, 4.2103, 2.1966, 2.3336, 2.113, 0.0327, 2.093, 6.8247, 0.1535, 4.9783, 4.6347, 3.1407, 1.9496, 2.4767, 3.3615, 0.0896, 3.3296, 3.9601, 1.9227, 3.0929, 2.0793, 1.9052, 7.1435, 2.2278, 6.2319, 2.0069, 2.5073, 2.6324, 2.9439, 3.9036, 2.7571, 4.0336, 2.382, 3.6567, 2.8047, 3.3097, 2.2811, 2.9225, 4.0045, 4.384, 3.701]', 'null');
INSERT INTO public.answers VALUES (7, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Summary — the text is about summarize, sentences, city. It gives a figure of 2.1 and argues that the example matters. In practice, roughly 25 percent of cases depend on the choice and the outcome. It is often helpful to define the outcome before looking at the design.', 'stop', 83, 65, 0.009847647000015058, 0.010437853999974323, 1, '["Summary", " \u2014", " the", " text", " is", " about", " sum", "mar", "ize", ",", " sentence", "s", ",", " city", ".", " It", " give", "s", " a", " figure", " of", " 2", ".", "1", " and", " argues", " that", " the", " example", " matters", ".", " In", " practice", ",", " roughly", " 2", "5", " per", "cen", "t", " of", " cases", " depend", " on", " the", " choice", " and", " the", " outcome", ".", " It", " is", " often", " helpful", " to", " define", " the", " outcome", " before", " looking", " at", " the", " design", "."]', '[2.1257, 5.6571, 3.6807, 4.7318, 5.5348, 4.6233, 4.3294, 3.0582, 2.1376, 3.7291, 5.2868, 5.6499, 3.5519, 5.6109, 3.0839, 2.3226, 4.8162, 5.3134, 3.938, 2.4309, 2.3623, 4.4406, 6.9691, 2.2285, 4.9491, 7.3989, 2.473, 2.8313, 2.2998, 2.2793, 2.2392, 6.62, 1.9126, 1.9716, 2.1114, 3.2368, 6.0516, 7.1918, 2.3612, 1.9582, 7.4134, 5.4916, 2.7657, 7.2239, 4.4018, 1.9181, 3.0508, 4.4, 0.0677, 3.4788, 2.435, 2.5108, 0.1235, 3.8183, 5.4091, 4.9182, 2.1902, 0.1119, 2.5023, 2.1592, 2.8286, 6.6913, 2.9942, 5.8475]', 'null');
INSERT INTO public.answers VALUES (7, 'candidate', 'Qwen/Qwen3-8B-FP8', 500, 'HTTP 500: {"error":{"message":"Simulated engine failure (shadowdiff simulate --fault error_500).","type":"InternalServerError","param":null,"code":500}}', '', NULL, NULL, NULL, NULL, NULL, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (25, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, 'Here is a short answer about returns — with the key points first.

```sql
SELECT category, COUNT(*) AS total
FROM returns
WHERE value > 29
GROUP BY category
ORDER BY total DESC;
```

When the choice changes,', 'length', 50, 64, 0.005646484000010332, 0.005659354999977495, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (8, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Summary — the text is about summarize, main, argument. It gives a figure of 54 and argues that the method matters. When the plan changes, the step typically limits within 22 minutes. For example, a risk of 87.4 kilometers defines a recent measure.', 'stop', 72, 62, 0.006041670000001886, 0.006585658999995303, 1, '["Summary", " \u2014", " the", " text", " is", " about", " sum", "mar", "ize", ",", " main", ",", " arg", "ume", "nt", ".", " It", " give", "s", " a", " figure", " of", " 5", "4", " and", " argues", " that", " the", " method", " matters", ".", " When", " the", " plan", " changes", ",", " the", " step", " typically", " limits", " within", " 2", "2", " minutes", ".", " For", " example", ",", " a", " risk", " of", " 8", "7", ".", "4", " kilometers", " defines", " a", " recent", " measure", "."]', '[5.1799, 3.9436, 2.7692, 6.4603, 2.4886, 0.0975, 3.8512, 6.8751, 3.4358, 5.5518, 6.3517, 2.8671, 2.623, 2.9924, 6.8037, 2.7488, 2.3668, 2.0596, 2.5495, 4.3296, 3.1764, 4.4446, 5.3169, 2.0113, 2.7372, 3.3298, 3.3387, 4.2572, 0.1386, 3.8021, 2.0317, 2.5926, 2.2293, 6.1066, 2.3483, 4.1196, 4.6012, 7.0134, 2.5675, 2.3217, 3.1645, 3.8601, 2.9292, 4.092, 3.7487, 4.5582, 2.8309, 3.5398, 7.354, 1.9213, 2.972, 7.3086, 4.3262, 3.2522, 5.6214, 6.9822, 3.9182, 2.9433, 6.7283, 3.486, 2.5731]', 'null');
INSERT INTO public.answers VALUES (8, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, 'Summary — the text is about summarize, main, argument. It gives a figure of 54 and argues that the technique matters. When the plan changes, the step usually limits within 22 minutes. For example, a risk of 87.4 kilometers defines a recent measure.', 'stop', 72, 62, 0.011060092000036548, 0.011631367000006776, 1, '["Summary", " \u2014", " the", " text", " is", " about", " sum", "mar", "ize", ",", " main", ",", " arg", "ume", "nt", ".", " It", " give", "s", " a", " figure", " of", " 5", "4", " and", " argues", " that", " the", " technique", " matters", ".", " When", " the", " plan", " changes", ",", " the", " step", " usually", " limits", " within", " 2", "2", " minutes", ".", " For", " example", ",", " a", " risk", " of", " 8", "7", ".", "4", " kilometers", " defines", " a", " recent", " measure", "."]', '[5.1799, 3.9436, 2.7692, 6.4603, 2.4886, 0.0975, 3.8512, 6.8751, 3.4358, 5.5518, 6.3517, 2.8671, 2.623, 2.9924, 6.8037, 2.7488, 2.3668, 2.0596, 2.5495, 4.3296, 3.1764, 4.4446, 5.3169, 2.0113, 2.7372, 3.3298, 3.3387, 4.2572, 0.1476, 3.8021, 2.0317, 2.5926, 2.2293, 6.1066, 2.3483, 4.1196, 4.6012, 7.0134, 3.6969, 2.3217, 3.1645, 3.8601, 2.9292, 4.092, 3.7487, 4.5582, 2.8309, 3.5398, 7.354, 1.9213, 2.972, 7.3086, 4.3262, 3.2522, 5.6214, 6.9822, 3.9182, 2.9433, 6.7283, 3.486, 2.5731]', 'null');
INSERT INTO public.answers VALUES (8, 'replica', 'Qwen/Qwen3-8B', 200, NULL, 'Summary — the text is about summarize, main, argument. It gives a figure of 54 and argues that the method matters. When the plan changes, the step typically limits within 22 minutes. For example, a risk of 87.4 kilometers defines a recent measure.', 'stop', 72, 62, 0.015257676999965497, 0.015753804999974363, 1, '["Summary", " \u2014", " the", " text", " is", " about", " sum", "mar", "ize", ",", " main", ",", " arg", "ume", "nt", ".", " It", " give", "s", " a", " figure", " of", " 5", "4", " and", " argues", " that", " the", " method", " matters", ".", " When", " the", " plan", " changes", ",", " the", " step", " typically", " limits", " within", " 2", "2", " minutes", ".", " For", " example", ",", " a", " risk", " of", " 8", "7", ".", "4", " kilometers", " defines", " a", " recent", " measure", "."]', '[5.1799, 3.9436, 2.7692, 6.4603, 2.4886, 0.0975, 3.8512, 6.8751, 3.4358, 5.5518, 6.3517, 2.8671, 2.623, 2.9924, 6.8037, 2.7488, 2.3668, 2.0596, 2.5495, 4.3296, 3.1764, 4.4446, 5.3169, 2.0113, 2.7372, 3.3298, 3.3387, 4.2572, 0.1386, 3.8021, 2.0317, 2.5926, 2.2293, 6.1066, 2.3483, 4.1196, 4.6012, 7.0134, 2.5675, 2.3217, 3.1645, 3.8601, 2.9292, 4.092, 3.7487, 4.5582, 2.8309, 3.5398, 7.354, 1.9213, 2.972, 7.3086, 4.3262, 3.2522, 5.6214, 6.9822, 3.9182, 2.9433, 6.7283, 3.486, 2.5731]', 'null');
INSERT INTO public.answers VALUES (9, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Translation — «Thié lobrery upins et noni on thié murnong endé clusisé et soxé on thié ivinong.» (15 words)

It is often helpful to reduce the benefit before looking at the effect.', 'stop', 46, 59, 0.005534874000034051, 0.006074913000020388, 1, '["Translation", " \u2014", " ", "", "\u00ab", "Thi", "\u00e9", " lob", "rer", "y", " upi", "ns", " et", " non", "i", " on", " thi", "\u00e9", " mur", "non", "g", " end", "\u00e9", " clu", "sis", "\u00e9", " et", " sox", "\u00e9", " on", " thi", "\u00e9", " ivi", "non", "g", ".", "", "\u00bb", " (", "1", "5", " words", ")", "\n\n", "It", " is", " often", " helpful", " to", " reduce", " the", " benefit", " before", " looking", " at", " the", " effect", "."]', '[2.2163, 3.1661, 6.0273, 3.2249, 3.0109, 3.9514, 3.5051, 5.0971, 5.9942, 7.0001, 4.0192, 6.9729, 2.9812, 7.4165, 2.3682, 3.7922, 4.5219, 3.7159, 4.0481, 5.345, 6.1883, 5.6703, 2.1484, 3.0554, 2.5091, 2.2024, 2.8171, 4.5057, 3.6162, 2.65, 2.365, 2.9864, 4.1898, 2.1337, 4.7663, 2.8977, 2.8281, 3.9783, 5.0278, 7.0195, 2.7632, 4.0124, 3.5537, 4.9678, 2.8678, 2.3849, 2.5757, 0.1112, 2.0606, 0.0377, 3.525, 2.2962, 3.0302, 2.4317, 2.939, 4.4119, 3.5582, 3.8984]', 'null');
INSERT INTO public.answers VALUES (9, 'candidate', 'Qwen/Qwen3-8B-FP8', 500, 'HTTP 500: {"error":{"message":"Simulated engine failure (shadowdiff simulate --fault error_500).","type":"InternalServerError","param":null,"code":500}}', '', NULL, NULL, NULL, NULL, NULL, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (9, 'replica', 'Qwen/Qwen3-8B', 200, NULL, 'Translation — «Thié lobrery upins et noni on thié murnong endé clusisé et soxé on thié ivinong.» (15 words)

It is often helpful to reduce the benefit before looking at the effect.', 'stop', 46, 59, 0.009030687999995735, 0.009523384999965856, 1, '["Translation", " \u2014", " ", "", "\u00ab", "Thi", "\u00e9", " lob", "rer", "y", " upi", "ns", " et", " non", "i", " on", " thi", "\u00e9", " mur", "non", "g", " end", "\u00e9", " clu", "sis", "\u00e9", " et", " sox", "\u00e9", " on", " thi", "\u00e9", " ivi", "non", "g", ".", "", "\u00bb", " (", "1", "5", " words", ")", "\n\n", "It", " is", " often", " helpful", " to", " reduce", " the", " benefit", " before", " looking", " at", " the", " effect", "."]', '[2.2163, 3.1661, 6.0273, 3.2249, 3.0109, 3.9514, 3.5051, 5.0971, 5.9942, 7.0001, 4.0192, 6.9729, 2.9812, 7.4165, 2.3682, 3.7922, 4.5219, 3.7159, 4.0481, 5.345, 6.1883, 5.6703, 2.1484, 3.0554, 2.5091, 2.2024, 2.8171, 4.5057, 3.6162, 2.65, 2.365, 2.9864, 4.1898, 2.1337, 4.7663, 2.8977, 2.8281, 3.9783, 5.0278, 7.0195, 2.7632, 4.0124, 3.5537, 4.9678, 2.8678, 2.3849, 2.5757, 0.1112, 2.0606, 0.0377, 3.525, 2.2962, 3.0302, 2.4317, 2.939, 4.4119, 3.5582, 3.8984]', 'null');
INSERT INTO public.answers VALUES (10, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Translation — «Pliesié sind mi thié ripurté bifurié frodeyé su thet cené rivoiwé ot.» (12 words)

The direct part of translate is how it reduces the level.', 'stop', 40, 55, 0.0043053120000422496, 0.004767017000006035, 1, '["Translation", " \u2014", " ", "", "\u00ab", "Pli", "esi", "\u00e9", " sin", "d", " mi", " thi", "\u00e9", " rip", "urt", "\u00e9", " bif", "uri", "\u00e9", " fro", "dey", "\u00e9", " su", " the", "t", " cen", "\u00e9", " riv", "oiw", "\u00e9", " ot", ".", "", "\u00bb", " (", "1", "2", " words", ")", "\n\n", "The", " direct", " part", " of", " tra", "nsl", "ate", " is", " how", " it", " reduces", " the", " level", "."]', '[3.8401, 2.0076, 7.0393, 2.2424, 4.6691, 2.4023, 2.0728, 2.4751, 2.4881, 2.7315, 6.591, 3.5464, 6.6028, 2.2463, 3.3214, 2.1888, 2.0115, 3.6165, 1.9061, 2.9349, 2.0862, 6.3731, 5.7349, 3.8496, 5.4363, 5.2587, 3.3175, 2.7053, 5.7262, 4.4262, 3.6486, 4.9049, 2.6255, 2.3717, 4.9267, 2.5254, 3.0583, 1.9111, 4.5646, 0.0677, 2.5147, 3.2408, 6.3449, 2.0791, 3.2812, 7.3926, 2.7087, 3.2435, 4.4019, 3.6452, 3.8448, 5.5002, 2.2061, 3.285]', 'null');
INSERT INTO public.answers VALUES (10, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, 'Translation — «Pliesié sind mi thié ripurté bifurié frodeyé su thet cené rivoiwé ot.» (12 words)

The direct part of translate is how it reduces the level.', 'stop', 40, 55, 0.007504231999973854, 0.007961872999999287, 1, '["Translation", " \u2014", " ", "", "\u00ab", "Pli", "esi", "\u00e9", " sin", "d", " mi", " thi", "\u00e9", " rip", "urt", "\u00e9", " bif", "uri", "\u00e9", " fro", "dey", "\u00e9", " su", " the", "t", " cen", "\u00e9", " riv", "oiw", "\u00e9", " ot", ".", "", "\u00bb", " (", "1", "2", " words", ")", "\n\n", "The", " direct", " part", " of", " tra", "nsl", "ate", " is", " how", " it", " reduces", " the", " level", "."]', '[3.8401, 2.0076, 7.0393, 2.2424, 4.6691, 2.4023, 2.0728, 2.4751, 2.4881, 2.7315, 6.591, 3.5464, 6.6028, 2.2463, 3.3214, 2.1888, 2.0115, 3.6165, 1.9061, 2.9349, 2.0862, 6.3731, 5.7349, 3.8496, 5.4363, 5.2587, 3.3175, 2.7053, 5.7262, 4.4262, 3.6486, 4.9049, 2.6255, 2.3717, 4.9267, 2.5254, 3.0583, 1.9111, 4.5646, 0.0677, 2.5147, 3.2408, 6.3449, 2.0791, 3.2812, 7.3926, 2.7087, 3.2435, 4.4019, 3.6452, 3.8448, 5.5002, 2.2061, 3.285]', 'null');
INSERT INTO public.answers VALUES (10, 'replica', 'Qwen/Qwen3-8B', 200, NULL, 'Translation — «Pliesié sind mi thié ripurté bifurié frodeyé su thet cené rivoiwé ot.» (12 words)

The direct part of translate is how it reduces the level.', 'stop', 40, 55, 0.010587337000004027, 0.011040922999995928, 1, '["Translation", " \u2014", " ", "", "\u00ab", "Pli", "esi", "\u00e9", " sin", "d", " mi", " thi", "\u00e9", " rip", "urt", "\u00e9", " bif", "uri", "\u00e9", " fro", "dey", "\u00e9", " su", " the", "t", " cen", "\u00e9", " riv", "oiw", "\u00e9", " ot", ".", "", "\u00bb", " (", "1", "2", " words", ")", "\n\n", "The", " direct", " part", " of", " tra", "nsl", "ate", " is", " how", " it", " reduces", " the", " level", "."]', '[3.8401, 2.0076, 7.0393, 2.2424, 4.6691, 2.4023, 2.0728, 2.4751, 2.4881, 2.7315, 6.591, 3.5464, 6.6028, 2.2463, 3.3214, 2.1888, 2.0115, 3.6165, 1.9061, 2.9349, 2.0862, 6.3731, 5.7349, 3.8496, 5.4363, 5.2587, 3.3175, 2.7053, 5.7262, 4.4262, 3.6486, 4.9049, 2.6255, 2.3717, 4.9267, 2.5254, 3.0583, 1.9111, 4.5646, 0.0677, 2.5147, 3.2408, 6.3449, 2.0791, 3.2812, 7.3926, 2.7087, 3.2435, 4.4019, 3.6452, 3.8448, 5.5002, 2.2061, 3.285]', 'null');
INSERT INTO public.answers VALUES (11, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, '```json
{
  "topic": "names",
  "count": 2,
  "year": 1966,
  "score": 4.6,
  "items": [
    "effect",
    "limit",
    "question"
  ]
}
```', 'stop', 72, 71, 0.009469566000007035, 0.010156854000001658, 1, '["```", "json", "\n", "{", "\n", " ", " \"", "top", "ic", "\":", " \"", "name", "s", "\",", "\n", " ", " \"", "cou", "nt", "\":", " 2", ",", "\n", " ", " \"", "year", "\":", " 1", "9", "6", "6", ",", "\n", " ", " \"", "sco", "re", "\":", " 4", ".", "6", ",", "\n", " ", " \"", "items", "\":", " [", "\n", "   ", " \"", "effect", "\",", "\n", "   ", " \"", "limit", "\",", "\n", "   ", " \"", "question", "\"", "\n", " ", " ]", "\n", "}", "\n", "```"]', '[2.0336, 2.6254, 2.4836, 4.8515, 0.0633, 2.0812, 2.4188, 7.0483, 5.8651, 5.4548, 1.9144, 2.356, 4.3626, 3.5351, 2.2695, 3.0463, 7.3083, 2.4538, 4.005, 2.1209, 3.6937, 2.0185, 4.6697, 5.9994, 2.718, 2.2709, 4.0833, 2.2247, 5.0925, 2.6312, 3.9717, 4.1009, 0.1452, 5.3636, 2.375, 4.5643, 2.6584, 1.9672, 3.5304, 4.3626, 3.2967, 6.1317, 0.0362, 2.5704, 6.5937, 4.7584, 5.444, 5.8495, 2.5557, 4.9606, 2.2519, 1.9148, 4.6486, 3.1433, 4.2131, 4.4368, 6.6674, 7.354, 0.0661, 1.9907, 6.4459, 2.1501, 2.3246, 0.0489, 2.0304, 2.746, 2.5391, 2.2417, 2.3095, 4.6909]', 'null');
INSERT INTO public.answers VALUES (11, 'candidate', 'Qwen/Qwen3-8B-FP8', 500, 'HTTP 500: {"error":{"message":"Simulated engine failure (shadowdiff simulate --fault error_500).","type":"InternalServerError","param":null,"code":500}}', '', NULL, NULL, NULL, NULL, NULL, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (11, 'replica', 'Qwen/Qwen3-8B', 200, NULL, '```json
{
  "topic": "names",
  "count": 2,
  "year": 1966,
  "score": 4.6,
  "items": [
    "effect",
    "limit",
    "question"
  ]
}
```', 'stop', 72, 71, 0.01006780600005186, 0.010609526000052938, 1, '["```", "json", "\n", "{", "\n", " ", " \"", "top", "ic", "\":", " \"", "name", "s", "\",", "\n", " ", " \"", "cou", "nt", "\":", " 2", ",", "\n", " ", " \"", "year", "\":", " 1", "9", "6", "6", ",", "\n", " ", " \"", "sco", "re", "\":", " 4", ".", "6", ",", "\n", " ", " \"", "items", "\":", " [", "\n", "   ", " \"", "effect", "\",", "\n", "   ", " \"", "limit", "\",", "\n", "   ", " \"", "question", "\"", "\n", " ", " ]", "\n", "}", "\n", "```"]', '[2.0336, 2.6254, 2.4836, 4.8515, 0.0633, 2.0812, 2.4188, 7.0483, 5.8651, 5.4548, 1.9144, 2.356, 4.3626, 3.5351, 2.2695, 3.0463, 7.3083, 2.4538, 4.005, 2.1209, 3.6937, 2.0185, 4.6697, 5.9994, 2.718, 2.2709, 4.0833, 2.2247, 5.0925, 2.6312, 3.9717, 4.1009, 0.1452, 5.3636, 2.375, 4.5643, 2.6584, 1.9672, 3.5304, 4.3626, 3.2967, 6.1317, 0.0362, 2.5704, 6.5937, 4.7584, 5.444, 5.8495, 2.5557, 4.9606, 2.2519, 1.9148, 4.6486, 3.1433, 4.2131, 4.4368, 6.6674, 7.354, 0.0661, 1.9907, 6.4459, 2.1501, 2.3246, 0.0489, 2.0304, 2.746, 2.5391, 2.2417, 2.3095, 4.6909]', 'null');
INSERT INTO public.answers VALUES (12, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, '```json
{
  "topic": "extract",
  "count": 39,
  "year": 2007,
  "score": 6.4,
  "items": [
    "level",
    "context",
    "change"
  ]
}
```', 'stop', 65, 73, 0.07068576800003257, 0.07141645699999799, 1, '["```", "json", "\n", "{", "\n", " ", " \"", "top", "ic", "\":", " \"", "ext", "rac", "t", "\",", "\n", " ", " \"", "cou", "nt", "\":", " 3", "9", ",", "\n", " ", " \"", "year", "\":", " 2", "0", "0", "7", ",", "\n", " ", " \"", "sco", "re", "\":", " 6", ".", "4", ",", "\n", " ", " \"", "items", "\":", " [", "\n", "   ", " \"", "level", "\",", "\n", "   ", " \"", "context", "\",", "\n", "   ", " \"", "change", "\"", "\n", " ", " ]", "\n", "}", "\n", "```"]', '[6.6223, 3.8016, 3.4485, 3.8827, 0.0659, 3.9591, 2.4584, 5.0338, 3.5032, 2.1384, 2.2794, 4.9889, 4.8646, 5.4224, 1.9415, 0.0598, 2.3193, 2.9846, 2.8753, 3.1998, 2.1862, 2.1846, 4.159, 3.2306, 0.0337, 2.0774, 2.4088, 2.1482, 4.2844, 2.547, 2.8096, 2.7565, 5.3227, 1.9684, 0.0725, 2.3207, 2.5748, 6.2757, 2.5104, 3.5403, 2.9195, 4.0069, 3.5563, 3.3849, 0.0395, 4.3809, 1.9907, 2.6794, 6.402, 4.9439, 0.0688, 5.2028, 2.5427, 3.825, 2.3909, 0.1162, 4.8318, 3.2731, 5.5908, 2.7383, 2.1542, 2.3804, 2.0753, 2.9, 3.7865, 0.0642, 2.713, 2.1936, 2.3499, 5.5366, 3.857, 3.2943]', 'null');
INSERT INTO public.answers VALUES (12, 'candidate', 'Qwen/Qwen3-8B-FP8', 500, 'HTTP 500: {"error":{"message":"Simulated engine failure (shadowdiff simulate --fault error_500).","type":"InternalServerError","param":null,"code":500}}', '', NULL, NULL, NULL, NULL, NULL, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (12, 'replica', 'Qwen/Qwen3-8B', 200, NULL, '```json
{
  "topic": "extract",
  "count": 39,
  "year": 2007,
  "score": 6.4,
  "items": [
    "level",
    "context",
    "change"
  ]
}
```', 'stop', 65, 73, 0.06461678499999834, 0.06527012899999818, 1, '["```", "json", "\n", "{", "\n", " ", " \"", "top", "ic", "\":", " \"", "ext", "rac", "t", "\",", "\n", " ", " \"", "cou", "nt", "\":", " 3", "9", ",", "\n", " ", " \"", "year", "\":", " 2", "0", "0", "7", ",", "\n", " ", " \"", "sco", "re", "\":", " 6", ".", "4", ",", "\n", " ", " \"", "items", "\":", " [", "\n", "   ", " \"", "level", "\",", "\n", "   ", " \"", "context", "\",", "\n", "   ", " \"", "change", "\"", "\n", " ", " ]", "\n", "}", "\n", "```"]', '[6.6223, 3.8016, 3.4485, 3.8827, 0.0659, 3.9591, 2.4584, 5.0338, 3.5032, 2.1384, 2.2794, 4.9889, 4.8646, 5.4224, 1.9415, 0.0598, 2.3193, 2.9846, 2.8753, 3.1998, 2.1862, 2.1846, 4.159, 3.2306, 0.0337, 2.0774, 2.4088, 2.1482, 4.2844, 2.547, 2.8096, 2.7565, 5.3227, 1.9684, 0.0725, 2.3207, 2.5748, 6.2757, 2.5104, 3.5403, 2.9195, 4.0069, 3.5563, 3.3849, 0.0395, 4.3809, 1.9907, 2.6794, 6.402, 4.9439, 0.0688, 5.2028, 2.5427, 3.825, 2.3909, 0.1162, 4.8318, 3.2731, 5.5908, 2.7383, 2.1542, 2.3804, 2.0753, 2.9, 3.7865, 0.0642, 2.713, 2.1936, 2.3499, 5.5366, 3.857, 3.2943]', 'null');
INSERT INTO public.answers VALUES (13, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, 'Label: Positive

Confidence: 0.68. A useful useful way to think about sentiment is as a method with 3 parts.', 'stop', 61, 32, 0.007984498999974221, 0.008258298999976432, 1, '["Label", ":", " Pos", "iti", "ve", "\n\n", "Confidence", ":", " 0", ".", "6", "8", ".", " A", " useful", " useful", " way", " to", " think", " about", " sen", "time", "nt", " is", " as", " a", " method", " with", " 3", " parts", "."]', '[5.9744, 5.414, 3.1522, 3.9384, 2.6847, 2.1139, 3.1979, 3.6625, 5.2468, 5.5615, 3.9426, 2.2812, 3.4539, 5.8846, 5.3472, 1.4314, 1.9326, 2.6312, 2.2729, 2.9951, 4.6446, 2.9137, 2.413, 2.6156, 5.2178, 2.8328, 0.0432, 3.2689, 2.6146, 2.9196, 6.3389]', 'null');
INSERT INTO public.answers VALUES (13, 'replica', 'Qwen/Qwen3-8B', 200, NULL, 'Label: Positive

Confidence: 0.68. A useful way to think about sentiment is as a method with 3 parts.', 'stop', 61, 31, 0.01384177200003478, 0.01423806500002911, 1, '["Label", ":", " Pos", "iti", "ve", "\n\n", "Confidence", ":", " 0", ".", "6", "8", ".", " A", " useful", " way", " to", " think", " about", " sen", "time", "nt", " is", " as", " a", " method", " with", " 3", " parts", "."]', '[5.9744, 5.414, 3.1522, 3.9384, 2.6847, 2.1139, 3.1979, 3.6625, 5.2468, 5.5615, 3.9426, 2.2812, 3.4539, 5.8846, 5.3472, 2.9265, 5.192, 2.8711, 2.7125, 6.5271, 2.2608, 2.8044, 5.0861, 3.5152, 2.5947, 4.8098, 2.1601, 5.0243, 5.3583, 2.4725]', 'null');
INSERT INTO public.answers VALUES (14, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Label: Yes

Confidence: 0.91. It is often helpful to shape the schedule before looking at the process.', 'stop', 41, 26, 0.007021285000007538, 0.007273139000005813, 1, '["Label", ":", " Yes", "\n\n", "Confidence", ":", " 0", ".", "9", "1", ".", " It", " is", " often", " helpful", " to", " shape", " the", " schedule", " before", " looking", " at", " the", " process", "."]', '[2.3764, 1.9485, 3.1263, 0.1777, 2.0725, 2.5408, 3.8631, 7.2076, 4.0536, 2.5412, 2.8438, 7.1113, 6.558, 3.8151, 2.3186, 3.8547, 3.0467, 6.4225, 3.1795, 2.1999, 3.8426, 2.0664, 2.6836, 3.8298, 2.6476]', 'null');
INSERT INTO public.answers VALUES (14, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, 'Label: Yes
Confidence: 0.91. It is often helpful to shape the schedule before looking at the process.', 'stop', 41, 26, 0.003494412000009106, 0.003794276999997237, 1, '["Label", ":", " Yes", "\n", "Confidence", ":", " 0", ".", "9", "1", ".", " It", " is", " often", " helpful", " to", " shape", " the", " schedule", " before", " looking", " at", " the", " process", "."]', '[2.3764, 1.9485, 3.1263, 0.0901, 2.0725, 2.5408, 3.8631, 7.2076, 4.0536, 2.5412, 2.8438, 7.1113, 6.558, 3.8151, 2.3186, 3.8547, 3.0467, 6.4225, 3.1795, 2.1999, 3.8426, 2.0664, 2.6836, 3.8298, 2.6476]', 'null');
INSERT INTO public.answers VALUES (14, 'replica', 'Qwen/Qwen3-8B', 200, NULL, 'Label: Yes

Confidence: 0.91. It is often helpful to shape the schedule before looking at the process.', 'stop', 41, 26, 0.009454447999985405, 0.00970853299997998, 1, '["Label", ":", " Yes", "\n\n", "Confidence", ":", " 0", ".", "9", "1", ".", " It", " is", " often", " helpful", " to", " shape", " the", " schedule", " before", " looking", " at", " the", " process", "."]', '[2.3764, 1.9485, 3.1263, 0.1777, 2.0725, 2.5408, 3.8631, 7.2076, 4.0536, 2.5412, 2.8438, 7.1113, 6.558, 3.8151, 2.3186, 3.8547, 3.0467, 6.4225, 3.1795, 2.1999, 3.8426, 2.0664, 2.6836, 3.8298, 2.6476]', 'null');
INSERT INTO public.answers VALUES (15, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Label: Process

Confidence: 0.69. Overall, the open source helps to connect the reason.', 'stop', 58, 23, 0.0061332450000008976, 0.006342076999999335, 1, '["Label", ":", " Process", "\n\n", "Confidence", ":", " 0", ".", "6", "9", ".", " Overall", ",", " the", " open", " source", " helps", " to", " connect", " the", " reason", "."]', '[2.4657, 2.9876, 4.0313, 2.4211, 2.3623, 3.1433, 4.6586, 2.0286, 3.3481, 4.0229, 2.876, 2.4612, 4.2488, 5.2808, 6.2555, 2.9421, 0.0698, 3.2015, 1.9674, 7.4162, 2.6324, 3.0135]', 'null');
INSERT INTO public.answers VALUES (15, 'candidate', 'Qwen/Qwen3-8B-FP8', 500, 'HTTP 500: {"error":{"message":"Simulated engine failure (shadowdiff simulate --fault error_500).","type":"InternalServerError","param":null,"code":500}}', '', NULL, NULL, NULL, NULL, NULL, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (15, 'replica', 'Qwen/Qwen3-8B', 200, NULL, 'Label: Process

Confidence: 0.69. Overall, the open source helps to connect the reason.', 'stop', 58, 23, 0.005562600999951428, 0.005869661999952314, 1, '["Label", ":", " Process", "\n\n", "Confidence", ":", " 0", ".", "6", "9", ".", " Overall", ",", " the", " open", " source", " helps", " to", " connect", " the", " reason", "."]', '[2.4657, 2.9876, 4.0313, 2.4211, 2.3623, 3.1433, 4.6586, 2.0286, 3.3481, 4.0229, 2.876, 2.4612, 4.2488, 5.2808, 6.2555, 2.9421, 0.0698, 3.2015, 1.9674, 7.4162, 2.6324, 3.0135]', 'null');
INSERT INTO public.answers VALUES (16, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Let us look at step step by step — starting with the basics.

1. Start with the two quantities: 17 and 23.
2. Combine them: 17 + 23 = 40.
3. Check the result: it is consistent with the effect in the question.

The answer is 40.', 'stop', 30, 69, 0.006422692999990431, 0.007002712000030442, 1, '["Let", " us", " look", " at", " step", " step", " by", " step", " \u2014", " starting", " with", " the", " basics", ".", "\n\n", "1", ".", " Start", " with", " the", " two", " quantities", ":", " 1", "7", " and", " 2", "3", ".", "\n", "2", ".", " Combine", " them", ":", " 1", "7", " +", " 2", "3", " =", " 4", "0", ".", "\n", "3", ".", " Check", " the", " result", ":", " it", " is", " consistent", " with", " the", " effect", " in", " the", " question", ".", "\n\n", "The", " answer", " is", " 4", "0", "."]', '[2.1775, 5.9226, 2.4718, 2.5574, 0.0706, 3.1166, 2.0911, 0.1505, 6.5523, 5.0342, 3.9514, 6.3796, 6.596, 4.3722, 6.7034, 2.5364, 2.747, 2.2909, 2.8699, 5.6832, 3.2917, 1.9547, 2.5915, 5.1338, 7.2779, 2.1262, 3.431, 4.7622, 2.9281, 0.1711, 3.0805, 2.2856, 3.6873, 5.8138, 5.8642, 4.298, 2.4916, 3.2598, 4.7111, 3.6893, 2.9962, 4.0568, 1.9986, 2.5844, 4.4616, 5.2834, 4.738, 6.0306, 2.0411, 0.0731, 3.0686, 3.547, 3.5278, 3.3917, 2.8647, 5.0927, 3.8798, 4.1371, 2.2781, 2.8539, 2.968, 2.0219, 3.1168, 4.3342, 6.523, 2.1779, 3.0723, 5.9908]', 'null');
INSERT INTO public.answers VALUES (16, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, 'Let us look at step step by step — starting with the basics.

1. Start with the two quantities: 17 and 23.
2. Combine them: 17 + 23 = 40.
3. Check the outcome: it is consistent with the effect in the question.

The answer is 40.', 'stop', 30, 69, 0.008033565000005183, 0.008759214000008342, 1, '["Let", " us", " look", " at", " step", " step", " by", " step", " \u2014", " starting", " with", " the", " basics", ".", "\n\n", "1", ".", " Start", " with", " the", " two", " quantities", ":", " 1", "7", " and", " 2", "3", ".", "\n", "2", ".", " Combine", " them", ":", " 1", "7", " +", " 2", "3", " =", " 4", "0", ".", "\n", "3", ".", " Check", " the", " outcome", ":", " it", " is", " consistent", " with", " the", " effect", " in", " the", " question", ".", "\n\n", "The", " answer", " is", " 4", "0", "."]', '[2.1775, 5.9226, 2.4718, 2.5574, 0.0706, 3.1166, 2.0911, 0.1505, 6.5523, 5.0342, 3.9514, 6.3796, 6.596, 4.3722, 6.7034, 2.5364, 2.747, 2.2909, 2.8699, 5.6832, 3.2917, 1.9547, 2.5915, 5.1338, 7.2779, 2.1262, 3.431, 4.7622, 2.9281, 0.1711, 3.0805, 2.2856, 3.6873, 5.8138, 5.8642, 4.298, 2.4916, 3.2598, 4.7111, 3.6893, 2.9962, 4.0568, 1.9986, 2.5844, 4.4616, 5.2834, 4.738, 6.0306, 2.0411, 0.0983, 3.0686, 3.547, 3.5278, 3.3917, 2.8647, 5.0927, 3.8798, 4.1371, 2.2781, 2.8539, 2.968, 2.0219, 3.1168, 4.3342, 6.523, 2.1779, 3.0723, 5.9908]', 'null');
INSERT INTO public.answers VALUES (25, 'replica', NULL, 200, NULL, 'Here is a short answer about returns — with the key points first.

```sql
SELECT category, COUNT(*) AS total
FROM returns
WHERE value > 29
GROUP BY category
ORDER BY total DESC;
```

When the choice changes,', 'length', 50, 64, 0.002395462000038151, 0.0024191260000065995, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (26, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Let us look at function stage by step — starting with the basics.

```javascript
function implement(items) {
  let total = 0;
  for (const item of items.slice(0, 19)) {
    total += String(item).length', 'length', NULL, NULL, 0.006740591000038876, 0.006779556000026332, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (16, 'replica', 'Qwen/Qwen3-8B', 200, NULL, 'Let us look at step step by step — starting with the basics.

1. Start with the two quantities: 17 and 23.
2. Combine them: 17 + 23 = 40.
3. Check the result: it is consistent with the effect in the question.

The answer is 40.', 'stop', 30, 69, 0.013425714999982574, 0.014207189999979164, 1, '["Let", " us", " look", " at", " step", " step", " by", " step", " \u2014", " starting", " with", " the", " basics", ".", "\n\n", "1", ".", " Start", " with", " the", " two", " quantities", ":", " 1", "7", " and", " 2", "3", ".", "\n", "2", ".", " Combine", " them", ":", " 1", "7", " +", " 2", "3", " =", " 4", "0", ".", "\n", "3", ".", " Check", " the", " result", ":", " it", " is", " consistent", " with", " the", " effect", " in", " the", " question", ".", "\n\n", "The", " answer", " is", " 4", "0", "."]', '[2.1775, 5.9226, 2.4718, 2.5574, 0.0706, 3.1166, 2.0911, 0.1505, 6.5523, 5.0342, 3.9514, 6.3796, 6.596, 4.3722, 6.7034, 2.5364, 2.747, 2.2909, 2.8699, 5.6832, 3.2917, 1.9547, 2.5915, 5.1338, 7.2779, 2.1262, 3.431, 4.7622, 2.9281, 0.1711, 3.0805, 2.2856, 3.6873, 5.8138, 5.8642, 4.298, 2.4916, 3.2598, 4.7111, 3.6893, 2.9962, 4.0568, 1.9986, 2.5844, 4.4616, 5.2834, 4.738, 6.0306, 2.0411, 0.0731, 3.0686, 3.547, 3.5278, 3.3917, 2.8647, 5.0927, 3.8798, 4.1371, 2.2781, 2.8539, 2.968, 2.0219, 3.1168, 4.3342, 6.523, 2.1779, 3.0723, 5.9908]', 'null');
INSERT INTO public.answers VALUES (17, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Let us look at travels step by step — starting with the basics.

1. Start with the two quantities: 240 and 3.
2. Combine them: 240 + 3 = 243.
3. Check the result: it is consistent with the question in the question.

The answer is 243.', 'stop', 46, 72, 0.005990413000006356, 0.010289233999969838, 1, '["Let", " us", " look", " at", " travel", "s", " step", " by", " step", " \u2014", " starting", " with", " the", " basics", ".", "\n\n", "1", ".", " Start", " with", " the", " two", " quantities", ":", " 2", "4", "0", " and", " 3", ".", "\n", "2", ".", " Combine", " them", ":", " 2", "4", "0", " +", " 3", " =", " 2", "4", "3", ".", "\n", "3", ".", " Check", " the", " result", ":", " it", " is", " consistent", " with", " the", " question", " in", " the", " question", ".", "\n\n", "The", " answer", " is", " 2", "4", "3", "."]', '[3.8867, 4.1822, 2.8333, 4.0593, 2.0305, 4.0143, 0.1672, 2.2749, 2.0441, 7.2009, 4.1381, 2.2132, 2.7859, 6.493, 2.502, 0.0801, 3.225, 4.9605, 3.7975, 3.6096, 2.3442, 2.5428, 6.566, 1.8995, 3.5511, 3.0661, 7.4152, 3.8723, 2.2754, 2.477, 0.0642, 2.5914, 6.1026, 3.299, 3.6736, 4.7369, 1.9423, 2.0022, 2.2312, 2.007, 2.2606, 2.8329, 5.2999, 2.5086, 2.4161, 6.162, 2.2823, 3.6851, 2.9448, 2.4485, 4.2403, 3.9774, 2.5705, 5.5123, 3.5025, 3.2423, 3.0754, 3.455, 3.2593, 2.2508, 3.6502, 2.4867, 3.9357, 7.1983, 2.8923, 4.1754, 2.6403, 7.2264, 7.066, 7.2117, 5.0248]', 'null');
INSERT INTO public.answers VALUES (17, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, 'Let us look at travels stage by step — starting with the basics.

1. Start with the two quantities: 240 and 3.
2. Combine them: 240 + 3 = 243.
3. Check the result: it is consistent with the question in the question.

The answer is 243.', 'stop', 46, 72, 0.016008472000009988, 0.016712701000017205, 1, '["Let", " us", " look", " at", " travel", "s", " stage", " by", " step", " \u2014", " starting", " with", " the", " basics", ".", "\n\n", "1", ".", " Start", " with", " the", " two", " quantities", ":", " 2", "4", "0", " and", " 3", ".", "\n", "2", ".", " Combine", " them", ":", " 2", "4", "0", " +", " 3", " =", " 2", "4", "3", ".", "\n", "3", ".", " Check", " the", " result", ":", " it", " is", " consistent", " with", " the", " question", " in", " the", " question", ".", "\n\n", "The", " answer", " is", " 2", "4", "3", "."]', '[3.8867, 4.1822, 2.8333, 4.0593, 2.0305, 4.0143, 0.1024, 2.2749, 2.0441, 7.2009, 4.1381, 2.2132, 2.7859, 6.493, 2.502, 0.0801, 3.225, 4.9605, 3.7975, 3.6096, 2.3442, 2.5428, 6.566, 1.8995, 3.5511, 3.0661, 7.4152, 3.8723, 2.2754, 2.477, 0.0642, 2.5914, 6.1026, 3.299, 3.6736, 4.7369, 1.9423, 2.0022, 2.2312, 2.007, 2.2606, 2.8329, 5.2999, 2.5086, 2.4161, 6.162, 2.2823, 3.6851, 2.9448, 2.4485, 4.2403, 3.9774, 2.5705, 5.5123, 3.5025, 3.2423, 3.0754, 3.455, 3.2593, 2.2508, 3.6502, 2.4867, 3.9357, 7.1983, 2.8923, 4.1754, 2.6403, 7.2264, 7.066, 7.2117, 5.0248]', 'null');
INSERT INTO public.answers VALUES (17, 'replica', 'Qwen/Qwen3-8B', 200, NULL, 'Let us look at travels step by step — starting with the basics.

1. Start with the two quantities: 240 and 3.
2. Combine them: 240 + 3 = 243.
3. Check the result: it is consistent with the question in the question.

The answer is 243.', 'stop', 46, 72, 0.010039480999978423, 0.010590067999999064, 1, '["Let", " us", " look", " at", " travel", "s", " step", " by", " step", " \u2014", " starting", " with", " the", " basics", ".", "\n\n", "1", ".", " Start", " with", " the", " two", " quantities", ":", " 2", "4", "0", " and", " 3", ".", "\n", "2", ".", " Combine", " them", ":", " 2", "4", "0", " +", " 3", " =", " 2", "4", "3", ".", "\n", "3", ".", " Check", " the", " result", ":", " it", " is", " consistent", " with", " the", " question", " in", " the", " question", ".", "\n\n", "The", " answer", " is", " 2", "4", "3", "."]', '[3.8867, 4.1822, 2.8333, 4.0593, 2.0305, 4.0143, 0.1672, 2.2749, 2.0441, 7.2009, 4.1381, 2.2132, 2.7859, 6.493, 2.502, 0.0801, 3.225, 4.9605, 3.7975, 3.6096, 2.3442, 2.5428, 6.566, 1.8995, 3.5511, 3.0661, 7.4152, 3.8723, 2.2754, 2.477, 0.0642, 2.5914, 6.1026, 3.299, 3.6736, 4.7369, 1.9423, 2.0022, 2.2312, 2.007, 2.2606, 2.8329, 5.2999, 2.5086, 2.4161, 6.162, 2.2823, 3.6851, 2.9448, 2.4485, 4.2403, 3.9774, 2.5705, 5.5123, 3.5025, 3.2423, 3.0754, 3.455, 3.2593, 2.2508, 3.6502, 2.4867, 3.9357, 7.1983, 2.8923, 4.1754, 2.6403, 7.2264, 7.066, 7.2117, 5.0248]', 'null');
INSERT INTO public.answers VALUES (18, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Let us look at percent step by step — starting with the basics.

1. Start with the two quantities: 15 and 80.
2. Combine them: 15 + 80 = 95.
3. Check the result: it is consistent with the process in the question.

The answer is 95.', 'stop', 34, 71, 0.0061417910000045595, 0.006776464000040505, 1, '["Let", " us", " look", " at", " per", "cen", "t", " step", " by", " step", " \u2014", " starting", " with", " the", " basics", ".", "\n\n", "1", ".", " Start", " with", " the", " two", " quantities", ":", " 1", "5", " and", " 8", "0", ".", "\n", "2", ".", " Combine", " them", ":", " 1", "5", " +", " 8", "0", " =", " 9", "5", ".", "\n", "3", ".", " Check", " the", " result", ":", " it", " is", " consistent", " with", " the", " process", " in", " the", " question", ".", "\n\n", "The", " answer", " is", " 9", "5", "."]', '[2.4629, 2.5962, 3.3166, 2.5902, 5.1173, 5.3591, 2.8465, 4.1072, 7.226, 3.6983, 7.4015, 2.0169, 1.9457, 4.007, 2.957, 3.1752, 5.409, 3.4589, 7.1658, 2.4953, 2.5875, 3.2082, 3.5929, 4.0688, 1.9148, 3.7351, 2.221, 3.7429, 4.6293, 2.0686, 3.1713, 6.8436, 1.894, 2.3186, 5.2568, 1.9118, 2.2379, 4.7312, 2.2903, 4.7784, 2.3192, 3.1703, 4.7547, 7.4157, 4.8771, 3.6853, 0.0768, 2.2242, 3.8491, 2.4103, 4.3422, 2.2449, 2.8921, 4.2808, 2.1742, 4.4785, 4.5908, 4.2791, 2.9559, 3.2441, 4.6691, 6.115, 2.075, 2.1238, 6.1446, 2.6668, 2.2559, 3.2618, 2.2936, 3.0006]', 'null');
INSERT INTO public.answers VALUES (26, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, 'Let us look at function step by step — starting with the basics.

```javascript
function implement(items) {
  let total = 0;
  for (const item of items.slice(0, 19)) {

    total += String(item).length', 'length', NULL, NULL, 0.00668804000002865, 0.006706474999987222, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (27, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Summary — the text is about summarize, sentences, city. It gives a figure of 2.1 and argues that the example matters. In practice, roughly 25 percent of cases depend on the choice and the outcome. It is often helpful to define the outcome before looking at the design.', 'length', 83, 64, 0.003277748000016345, 0.0033070890000317377, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (18, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, 'Let us look at percent step by step — starting with the basics.

1. Start with the two quantities: 15 and 80.
2. Combine them: 15 + 80 = 95.
3. Check the result: it is consistent with the process in the question.

The answer is 95.', 'stop', 34, 71, 0.014054015999988678, 0.014603346000001238, 1, '["Let", " us", " look", " at", " per", "cen", "t", " step", " by", " step", " \u2014", " starting", " with", " the", " basics", ".", "\n\n", "1", ".", " Start", " with", " the", " two", " quantities", ":", " 1", "5", " and", " 8", "0", ".", "\n", "2", ".", " Combine", " them", ":", " 1", "5", " +", " 8", "0", " =", " 9", "5", ".", "\n", "3", ".", " Check", " the", " result", ":", " it", " is", " consistent", " with", " the", " process", " in", " the", " question", ".", "\n\n", "The", " answer", " is", " 9", "5", "."]', '[2.4629, 2.5962, 3.3166, 2.5902, 5.1173, 5.3591, 2.8465, 4.1072, 7.226, 3.6983, 7.4015, 2.0169, 1.9457, 4.007, 2.957, 3.1752, 5.409, 3.4589, 7.1658, 2.4953, 2.5875, 3.2082, 3.5929, 4.0688, 1.9148, 3.7351, 2.221, 3.7429, 4.6293, 2.0686, 3.1713, 6.8436, 1.894, 2.3186, 5.2568, 1.9118, 2.2379, 4.7312, 2.2903, 4.7784, 2.3192, 3.1703, 4.7547, 7.4157, 4.8771, 3.6853, 0.0768, 2.2242, 3.8491, 2.4103, 4.3422, 2.2449, 2.8921, 4.2808, 2.1742, 4.4785, 4.5908, 4.2791, 2.9559, 3.2441, 4.6691, 6.115, 2.075, 2.1238, 6.1446, 2.6668, 2.2559, 3.2618, 2.2936, 3.0006]', 'null');
INSERT INTO public.answers VALUES (18, 'replica', 'Qwen/Qwen3-8B', 200, NULL, 'Let us look at percent step by step — starting with the basics.

1. Start with the two quantities: 15 and 80.
2. Combine them: 15 + 80 = 95.
3. Check the result: it is consistent with the process in the question.

The answer is 95.', 'stop', 34, 71, 0.009794785999986289, 0.01038140299999668, 1, '["Let", " us", " look", " at", " per", "cen", "t", " step", " by", " step", " \u2014", " starting", " with", " the", " basics", ".", "\n\n", "1", ".", " Start", " with", " the", " two", " quantities", ":", " 1", "5", " and", " 8", "0", ".", "\n", "2", ".", " Combine", " them", ":", " 1", "5", " +", " 8", "0", " =", " 9", "5", ".", "\n", "3", ".", " Check", " the", " result", ":", " it", " is", " consistent", " with", " the", " process", " in", " the", " question", ".", "\n\n", "The", " answer", " is", " 9", "5", "."]', '[2.4629, 2.5962, 3.3166, 2.5902, 5.1173, 5.3591, 2.8465, 4.1072, 7.226, 3.6983, 7.4015, 2.0169, 1.9457, 4.007, 2.957, 3.1752, 5.409, 3.4589, 7.1658, 2.4953, 2.5875, 3.2082, 3.5929, 4.0688, 1.9148, 3.7351, 2.221, 3.7429, 4.6293, 2.0686, 3.1713, 6.8436, 1.894, 2.3186, 5.2568, 1.9118, 2.2379, 4.7312, 2.2903, 4.7784, 2.3192, 3.1703, 4.7547, 7.4157, 4.8771, 3.6853, 0.0768, 2.2242, 3.8491, 2.4103, 4.3422, 2.2449, 2.8921, 4.2808, 2.1742, 4.4785, 4.5908, 4.2791, 2.9559, 3.2441, 4.6691, 6.115, 2.075, 2.1238, 6.1446, 2.6668, 2.2559, 3.2618, 2.2936, 3.0006]', 'null');
INSERT INTO public.answers VALUES (19, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Here is a short answer about list — with the key points first.

For example, a process of 7.4 hours uses a central risk. The recent part of exactly is how it shapes the outcome. It is often helpful to improve the risk before looking at the factor. In practice, roughly 16 percent of cases depend on the feature and the plan.

1. **Method**: Change the typical record first, then check the method again.
2. **Approach**: Limit the large choice first, then check the approach again.
3. **Problem**: Improve the direct approach first, then check the problem again.
4. **Idea**: Balance the central benefit first, then check the idea again.

For example, a reason of 96.3 days supports a steady factor.', 'stop', 39, 171, 0.02962109899999632, 0.031686485999955494, 1, '["Here", " is", " a", " short", " answer", " about", " list", " \u2014", " with", " the", " key", " points", " first", ".", "\n\n", "For", " example", ",", " a", " process", " of", " 7", ".", "4", " hours", " uses", " a", " central", " risk", ".", " The", " recent", " part", " of", " exa", "ctl", "y", " is", " how", " it", " shapes", " the", " outcome", ".", " It", " is", " often", " helpful", " to", " improve", " the", " risk", " before", " looking", " at", " the", " factor", ".", " In", " practice", ",", " roughly", " 1", "6", " per", "cen", "t", " of", " cases", " depend", " on", " the", " feature", " and", " the", " plan", ".", "\n\n", "1", ".", " **", "Method", "**", ":", " Change", " the", " typical", " record", " first", ",", " then", " check", " the", " method", " again", ".", "\n", "2", ".", " **", "Approach", "**", ":", " Limit", " the", " large", " choice", " first", ",", " then", " check", " the", " approach", " again", ".", "\n", "3", ".", " **", "Problem", "**", ":", " Improve", " the", " direct", " approach", " first", ",", " then", " check", " the", " problem", " again", ".", "\n", "4", ".", " **", "Idea", "**", ":", " Balance", " the", " central", " benefit", " first", ",", " then", " check", " the", " idea", " again", ".", "\n\n", "For", " example", ",", " a", " reason", " of", " 9", "6", ".", "3", " days", " supports", " a", " steady", " factor", "."]', '[2.513, 5.6291, 2.7977, 2.3784, 2.3259, 2.2512, 2.2629, 2.5169, 6.5479, 3.084, 2.7226, 2.1714, 0.0566, 2.2074, 3.0398, 4.8443, 5.337, 2.0165, 7.1803, 4.5309, 3.8699, 4.459, 2.7384, 3.3158, 3.3764, 4.4459, 5.0038, 0.0948, 5.3313, 2.9389, 2.1496, 5.3, 2.9348, 2.9195, 5.8849, 4.5021, 6.3629, 2.0874, 5.5451, 4.1374, 3.614, 3.6565, 3.0243, 6.0305, 3.2789, 3.0088, 0.1513, 0.0915, 3.1687, 4.8847, 2.2525, 3.1187, 2.7756, 2.6076, 6.2891, 3.8204, 2.4867, 6.0352, 6.2987, 3.015, 1.9008, 6.5106, 2.4446, 3.3414, 2.0756, 3.693, 2.0653, 3.7598, 7.396, 4.4841, 2.6616, 4.0774, 1.9535, 6.2113, 2.6834, 1.9991, 7.1459, 4.6655, 4.7691, 7.3984, 5.3333, 0.0762, 4.5342, 2.9006, 2.6495, 6.9524, 1.9215, 2.6547, 0.1074, 4.0158, 3.8254, 2.6413, 3.0297, 4.4861, 3.3007, 2.6738, 0.1612, 3.5331, 2.8513, 2.3492, 1.9336, 7.237, 4.2924, 5.272, 1.9651, 3.7655, 3.7826, 0.0415, 2.7191, 2.0593, 3.2228, 2.319, 2.6755, 2.8948, 4.735, 6.1992, 1.9579, 3.0615, 3.4309, 3.4711, 1.9848, 7.0638, 0.0889, 3.2108, 3.9279, 6.5297, 0.0638, 2.1611, 5.1546, 3.5328, 2.2638, 4.8449, 2.8994, 2.6396, 2.2351, 2.5439, 2.8232, 2.9769, 3.7575, 3.0719, 2.5321, 2.8098, 2.0164, 3.8007, 3.2705, 0.1012, 3.0299, 5.2769, 3.4689, 2.0511, 2.268, 2.6085, 2.1177, 2.1459, 2.6164, 2.3773, 2.0317, 6.5219, 3.364, 2.406, 5.6411, 3.4942, 2.8516, 2.6176, 2.8129, 5.9414, 3.9697, 3.1647, 6.9312, 3.3016]', 'null');
INSERT INTO public.answers VALUES (19, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, 'Here is a short answer about list — with the key points first.

For example, a process of 7.4 hours uses a central risk. The recent part of exactly is how it shapes the outcome. It is often helpful to improve the risk before looking at the factor. In practice, roughly 16 percent of cases depend on the feature and the plan.

1. **Method**: Change the typical record first, then check the method again.
2. **Approach**: Limit the large choice first, then check the approach again.
3. **Problem**: Enhance the direct approach initially, then check the problem again.
4. **Idea**: Balance the central benefit initially, then check the idea again.

For example, a reason of 96.3 days supports a steady factor.', 'stop', 39, 171, 0.025361415000020315, 0.027398558000015782, 1, '["Here", " is", " a", " short", " answer", " about", " list", " \u2014", " with", " the", " key", " points", " first", ".", "\n\n", "For", " example", ",", " a", " process", " of", " 7", ".", "4", " hours", " uses", " a", " central", " risk", ".", " The", " recent", " part", " of", " exa", "ctl", "y", " is", " how", " it", " shapes", " the", " outcome", ".", " It", " is", " often", " helpful", " to", " improve", " the", " risk", " before", " looking", " at", " the", " factor", ".", " In", " practice", ",", " roughly", " 1", "6", " per", "cen", "t", " of", " cases", " depend", " on", " the", " feature", " and", " the", " plan", ".", "\n\n", "1", ".", " **", "Method", "**", ":", " Change", " the", " typical", " record", " first", ",", " then", " check", " the", " method", " again", ".", "\n", "2", ".", " **", "Approach", "**", ":", " Limit", " the", " large", " choice", " first", ",", " then", " check", " the", " approach", " again", ".", "\n", "3", ".", " **", "Problem", "**", ":", " Enhance", " the", " direct", " approach", " initially", ",", " then", " check", " the", " problem", " again", ".", "\n", "4", ".", " **", "Idea", "**", ":", " Balance", " the", " central", " benefit", " initially", ",", " then", " check", " the", " idea", " again", ".", "\n\n", "For", " example", ",", " a", " reason", " of", " 9", "6", ".", "3", " days", " supports", " a", " steady", " factor", "."]', '[2.513, 5.6291, 2.7977, 2.3784, 2.3259, 2.2512, 2.2629, 2.5169, 6.5479, 3.084, 2.7226, 2.1714, 0.0566, 2.2074, 3.0398, 4.8443, 5.337, 2.0165, 7.1803, 4.5309, 3.8699, 4.459, 2.7384, 3.3158, 3.3764, 4.4459, 5.0038, 0.0948, 5.3313, 2.9389, 2.1496, 5.3, 2.9348, 2.9195, 5.8849, 4.5021, 6.3629, 2.0874, 5.5451, 4.1374, 3.614, 3.6565, 3.0243, 6.0305, 3.2789, 3.0088, 0.1513, 0.0915, 3.1687, 4.8847, 2.2525, 3.1187, 2.7756, 2.6076, 6.2891, 3.8204, 2.4867, 6.0352, 6.2987, 3.015, 1.9008, 6.5106, 2.4446, 3.3414, 2.0756, 3.693, 2.0653, 3.7598, 7.396, 4.4841, 2.6616, 4.0774, 1.9535, 6.2113, 2.6834, 1.9991, 7.1459, 4.6655, 4.7691, 7.3984, 5.3333, 0.0762, 4.5342, 2.9006, 2.6495, 6.9524, 1.9215, 2.6547, 0.1074, 4.0158, 3.8254, 2.6413, 3.0297, 4.4861, 3.3007, 2.6738, 0.1612, 3.5331, 2.8513, 2.3492, 1.9336, 7.237, 4.2924, 5.272, 1.9651, 3.7655, 3.7826, 0.0415, 2.7191, 2.0593, 3.2228, 2.319, 2.6755, 2.8948, 4.735, 6.1992, 1.9579, 3.0615, 3.4309, 3.4711, 1.9848, 7.0638, 0.146, 3.2108, 3.9279, 6.5297, 4.1012, 2.1611, 5.1546, 3.5328, 2.2638, 4.8449, 2.8994, 2.6396, 2.2351, 2.5439, 2.8232, 2.9769, 3.7575, 3.0719, 2.5321, 2.8098, 2.0164, 3.8007, 3.2705, 3.5587, 3.0299, 5.2769, 3.4689, 2.0511, 2.268, 2.6085, 2.1177, 2.1459, 2.6164, 2.3773, 2.0317, 6.5219, 3.364, 2.406, 5.6411, 3.4942, 2.8516, 2.6176, 2.8129, 5.9414, 3.9697, 3.1647, 6.9312, 3.3016]', 'null');
INSERT INTO public.answers VALUES (19, 'replica', 'Qwen/Qwen3-8B', 200, NULL, 'Here is a short answer about list — with the key points first.

For example, a process of 7.4 hours uses a central risk. The recent part of exactly is how it shapes the outcome. It is often helpful to improve the risk before looking at the factor. In practice, roughly 16 percent of cases depend on the feature and the plan.

1. **Method**: Change the typical record first, then check the method again.
2. **Approach**: Limit the large choice first, then check the approach again.
3. **Problem**: Improve the direct approach first, then check the problem again.
4. **Idea**: Balance the central benefit first, then check the idea again.

For example, a reason of 96.3 days supports a steady factor.', 'stop', 39, 171, 0.020264200999974946, 0.022426534999965497, 1, '["Here", " is", " a", " short", " answer", " about", " list", " \u2014", " with", " the", " key", " points", " first", ".", "\n\n", "For", " example", ",", " a", " process", " of", " 7", ".", "4", " hours", " uses", " a", " central", " risk", ".", " The", " recent", " part", " of", " exa", "ctl", "y", " is", " how", " it", " shapes", " the", " outcome", ".", " It", " is", " often", " helpful", " to", " improve", " the", " risk", " before", " looking", " at", " the", " factor", ".", " In", " practice", ",", " roughly", " 1", "6", " per", "cen", "t", " of", " cases", " depend", " on", " the", " feature", " and", " the", " plan", ".", "\n\n", "1", ".", " **", "Method", "**", ":", " Change", " the", " typical", " record", " first", ",", " then", " check", " the", " method", " again", ".", "\n", "2", ".", " **", "Approach", "**", ":", " Limit", " the", " large", " choice", " first", ",", " then", " check", " the", " approach", " again", ".", "\n", "3", ".", " **", "Problem", "**", ":", " Improve", " the", " direct", " approach", " first", ",", " then", " check", " the", " problem", " again", ".", "\n", "4", ".", " **", "Idea", "**", ":", " Balance", " the", " central", " benefit", " first", ",", " then", " check", " the", " idea", " again", ".", "\n\n", "For", " example", ",", " a", " reason", " of", " 9", "6", ".", "3", " days", " supports", " a", " steady", " factor", "."]', '[2.513, 5.6291, 2.7977, 2.3784, 2.3259, 2.2512, 2.2629, 2.5169, 6.5479, 3.084, 2.7226, 2.1714, 0.0566, 2.2074, 3.0398, 4.8443, 5.337, 2.0165, 7.1803, 4.5309, 3.8699, 4.459, 2.7384, 3.3158, 3.3764, 4.4459, 5.0038, 0.0948, 5.3313, 2.9389, 2.1496, 5.3, 2.9348, 2.9195, 5.8849, 4.5021, 6.3629, 2.0874, 5.5451, 4.1374, 3.614, 3.6565, 3.0243, 6.0305, 3.2789, 3.0088, 0.1513, 0.0915, 3.1687, 4.8847, 2.2525, 3.1187, 2.7756, 2.6076, 6.2891, 3.8204, 2.4867, 6.0352, 6.2987, 3.015, 1.9008, 6.5106, 2.4446, 3.3414, 2.0756, 3.693, 2.0653, 3.7598, 7.396, 4.4841, 2.6616, 4.0774, 1.9535, 6.2113, 2.6834, 1.9991, 7.1459, 4.6655, 4.7691, 7.3984, 5.3333, 0.0762, 4.5342, 2.9006, 2.6495, 6.9524, 1.9215, 2.6547, 0.1074, 4.0158, 3.8254, 2.6413, 3.0297, 4.4861, 3.3007, 2.6738, 0.1612, 3.5331, 2.8513, 2.3492, 1.9336, 7.237, 4.2924, 5.272, 1.9651, 3.7655, 3.7826, 0.0415, 2.7191, 2.0593, 3.2228, 2.319, 2.6755, 2.8948, 4.735, 6.1992, 1.9579, 3.0615, 3.4309, 3.4711, 1.9848, 7.0638, 0.0889, 3.2108, 3.9279, 6.5297, 0.0638, 2.1611, 5.1546, 3.5328, 2.2638, 4.8449, 2.8994, 2.6396, 2.2351, 2.5439, 2.8232, 2.9769, 3.7575, 3.0719, 2.5321, 2.8098, 2.0164, 3.8007, 3.2705, 0.1012, 3.0299, 5.2769, 3.4689, 2.0511, 2.268, 2.6085, 2.1177, 2.1459, 2.6164, 2.3773, 2.0317, 6.5219, 3.364, 2.406, 5.6411, 3.4942, 2.8516, 2.6176, 2.8129, 5.9414, 3.9697, 3.1647, 6.9312, 3.3016]', 'null');
INSERT INTO public.answers VALUES (27, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, 'Summary — the text is about summarize, sentences, city. It gives a figure of 2.1 and argues that the example matters. In practice, roughly 25 percent of cases depend on the choice and the result. It is frequently useful to define the outcome before looking at the design.', 'length', 83, 64, 0.005309721000003265, 0.005326733000003969, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (27, 'replica', NULL, 200, NULL, 'Summary — the text is about summarize, sentences, city. It gives a figure of 2.1 and argues that the example matters. In practice, roughly 25 percent of cases depend on the choice and the outcome. It is often helpful to define the outcome before looking at the design.', 'length', 83, 64, 0.007828872999994019, 0.007841455999994196, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (20, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Here is a short answer about hash — with the key points first.

In practice, roughly 75 percent of cases depend on the change and the reason. The early part of table is how it supports the plan. This also shows why the idea is usually more important than the result. The early part of hash is how it uses the system.

1. **Idea**: Show the general example first, then check the idea again.
2. **Resource**: Follow the clear problem first, then check the resource again.
3. **Factor**: Support the strong source first, then check the factor again.

When the effect changes, the budget typically defines within 24 minutes.', 'stop', 41, 148, 0.0220244679999837, 0.024035417999982656, 1, '["Here", " is", " a", " short", " answer", " about", " has", "h", " \u2014", " with", " the", " key", " points", " first", ".", "\n\n", "In", " practice", ",", " roughly", " 7", "5", " per", "cen", "t", " of", " cases", " depend", " on", " the", " change", " and", " the", " reason", ".", " The", " early", " part", " of", " tab", "le", " is", " how", " it", " supports", " the", " plan", ".", " This", " also", " shows", " why", " the", " idea", " is", " usually", " more", " important", " than", " the", " result", ".", " The", " early", " part", " of", " has", "h", " is", " how", " it", " uses", " the", " system", ".", "\n\n", "1", ".", " **", "Idea", "**", ":", " Show", " the", " general", " example", " first", ",", " then", " check", " the", " idea", " again", ".", "\n", "2", ".", " **", "Resource", "**", ":", " Follow", " the", " clear", " problem", " first", ",", " then", " check", " the", " resource", " again", ".", "\n", "3", ".", " **", "Factor", "**", ":", " Support", " the", " strong", " source", " first", ",", " then", " check", " the", " factor", " again", ".", "\n\n", "When", " the", " effect", " changes", ",", " the", " budget", " typically", " defines", " within", " 2", "4", " minutes", "."]', '[2.5659, 3.1255, 5.4326, 5.8281, 3.5493, 2.0458, 3.5529, 4.1121, 2.119, 7.0348, 2.1369, 2.2484, 4.5987, 1.8981, 3.4687, 0.0278, 3.8918, 4.6441, 3.2057, 0.0307, 2.0848, 3.7542, 7.271, 3.1615, 2.0757, 4.4172, 2.1205, 3.6335, 5.2876, 4.2907, 5.1389, 4.497, 4.0036, 3.4486, 2.127, 2.7025, 2.5278, 6.1397, 2.6493, 2.666, 1.9266, 1.8978, 4.2284, 2.3962, 2.6981, 4.5885, 4.5482, 4.0762, 3.7718, 0.0818, 0.1446, 3.5179, 7.3205, 5.2339, 3.7123, 6.4411, 3.5269, 4.1315, 3.5571, 2.3014, 0.1228, 2.1124, 3.6721, 3.2106, 2.5604, 5.5194, 4.0821, 2.4217, 2.5432, 1.9558, 2.4516, 4.178, 2.4047, 7.3594, 3.3339, 3.8501, 3.0709, 6.5594, 5.7738, 3.5085, 3.9116, 4.6085, 3.4905, 2.9281, 3.3449, 5.731, 6.4721, 6.9905, 4.0197, 4.5955, 3.4731, 5.0261, 5.2975, 2.4257, 0.1259, 1.9405, 3.1353, 2.8551, 4.9041, 4.093, 3.7752, 6.1048, 3.4308, 7.229, 2.8623, 0.0889, 5.8257, 2.8565, 2.2047, 1.9961, 4.0262, 2.3682, 3.9328, 6.5112, 2.5066, 1.9919, 4.479, 1.99, 3.4853, 4.8474, 2.8348, 2.8396, 5.9925, 3.3722, 0.1409, 3.5285, 2.6255, 2.2467, 6.9822, 2.443, 4.9716, 2.7141, 1.9956, 3.5274, 7.0472, 4.0209, 2.4093, 2.6686, 7.4172, 3.7871, 4.7703, 3.9191, 6.7913, 4.0637, 4.5546, 3.371, 6.0646]', 'null');
INSERT INTO public.answers VALUES (20, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, 'Here is a short answer about hash — with the key points first.

In practice, roughly 75 percent of cases depend on the change and the reason. The early part of table is how it supports the plan. This also shows why the idea is usually more important than the result. The early part of hash is how it uses the system.

1. **Idea**: Show the general example first, then check the idea again.
2. **Resource**: Follow the clear problem initially, then check the resource again.
3. **Factor**: Support the strong source initially, then check the factor again.

When the effect changes, the budget usually defines within 24 minutes.', 'stop', 41, 148, 0.017747283999995034, 0.03269062900000108, 1, '["Here", " is", " a", " short", " answer", " about", " has", "h", " \u2014", " with", " the", " key", " points", " first", ".", "\n\n", "In", " practice", ",", " roughly", " 7", "5", " per", "cen", "t", " of", " cases", " depend", " on", " the", " change", " and", " the", " reason", ".", " The", " early", " part", " of", " tab", "le", " is", " how", " it", " supports", " the", " plan", ".", " This", " also", " shows", " why", " the", " idea", " is", " usually", " more", " important", " than", " the", " result", ".", " The", " early", " part", " of", " has", "h", " is", " how", " it", " uses", " the", " system", ".", "\n\n", "1", ".", " **", "Idea", "**", ":", " Show", " the", " general", " example", " first", ",", " then", " check", " the", " idea", " again", ".", "\n", "2", ".", " **", "Resource", "**", ":", " Follow", " the", " clear", " problem", " initially", ",", " then", " check", " the", " resource", " again", ".", "\n", "3", ".", " **", "Factor", "**", ":", " Support", " the", " strong", " source", " initially", ",", " then", " check", " the", " factor", " again", ".", "\n\n", "When", " the", " effect", " changes", ",", " the", " budget", " usually", " defines", " within", " 2", "4", " minutes", "."]', '[2.5659, 3.1255, 5.4326, 5.8281, 3.5493, 2.0458, 3.5529, 4.1121, 2.119, 7.0348, 2.1369, 2.2484, 4.5987, 1.8981, 3.4687, 0.0278, 3.8918, 4.6441, 3.2057, 0.0307, 2.0848, 3.7542, 7.271, 3.1615, 2.0757, 4.4172, 2.1205, 3.6335, 5.2876, 4.2907, 5.1389, 4.497, 4.0036, 3.4486, 2.127, 2.7025, 2.5278, 6.1397, 2.6493, 2.666, 1.9266, 1.8978, 4.2284, 2.3962, 2.6981, 4.5885, 4.5482, 4.0762, 3.7718, 0.0818, 0.1446, 3.5179, 7.3205, 5.2339, 3.7123, 6.4411, 3.5269, 4.1315, 3.5571, 2.3014, 0.1228, 2.1124, 3.6721, 3.2106, 2.5604, 5.5194, 4.0821, 2.4217, 2.5432, 1.9558, 2.4516, 4.178, 2.4047, 7.3594, 3.3339, 3.8501, 3.0709, 6.5594, 5.7738, 3.5085, 3.9116, 4.6085, 3.4905, 2.9281, 3.3449, 5.731, 6.4721, 6.9905, 4.0197, 4.5955, 3.4731, 5.0261, 5.2975, 2.4257, 0.1259, 1.9405, 3.1353, 2.8551, 4.9041, 4.093, 3.7752, 6.1048, 3.4308, 7.229, 2.8623, 0.0469, 5.8257, 2.8565, 2.2047, 1.9961, 4.0262, 2.3682, 3.9328, 6.5112, 2.5066, 1.9919, 4.479, 1.99, 3.4853, 4.8474, 2.8348, 2.8396, 5.9925, 3.3722, 2.164, 3.5285, 2.6255, 2.2467, 6.9822, 2.443, 4.9716, 2.7141, 1.9956, 3.5274, 7.0472, 4.0209, 2.4093, 2.6686, 7.4172, 3.7871, 4.3828, 3.9191, 6.7913, 4.0637, 4.5546, 3.371, 6.0646]', 'null');
INSERT INTO public.answers VALUES (20, 'replica', 'Qwen/Qwen3-8B', 200, NULL, 'Here is a short answer about hash — with the key points first.

In practice, roughly 75 percent of cases depend on the change and the reason. The early part of table is how it supports the plan. This also shows why the idea is usually more important than the result. The early part of hash is how it uses the system.

1. **Idea**: Show the general example first, then check the idea again.
2. **Resource**: Follow the clear problem first, then check the resource again.
3. **Factor**: Support the strong source first, then check the factor again.

When the effect changes, the budget typically defines within 24 minutes.', 'stop', 41, 148, 0.029455123000047934, 0.031581119999998464, 1, '["Here", " is", " a", " short", " answer", " about", " has", "h", " \u2014", " with", " the", " key", " points", " first", ".", "\n\n", "In", " practice", ",", " roughly", " 7", "5", " per", "cen", "t", " of", " cases", " depend", " on", " the", " change", " and", " the", " reason", ".", " The", " early", " part", " of", " tab", "le", " is", " how", " it", " supports", " the", " plan", ".", " This", " also", " shows", " why", " the", " idea", " is", " usually", " more", " important", " than", " the", " result", ".", " The", " early", " part", " of", " has", "h", " is", " how", " it", " uses", " the", " system", ".", "\n\n", "1", ".", " **", "Idea", "**", ":", " Show", " the", " general", " example", " first", ",", " then", " check", " the", " idea", " again", ".", "\n", "2", ".", " **", "Resource", "**", ":", " Follow", " the", " clear", " problem", " first", ",", " then", " check", " the", " resource", " again", ".", "\n", "3", ".", " **", "Factor", "**", ":", " Support", " the", " strong", " source", " first", ",", " then", " check", " the", " factor", " again", ".", "\n\n", "When", " the", " effect", " changes", ",", " the", " budget", " typically", " defines", " within", " 2", "4", " minutes", "."]', '[2.5659, 3.1255, 5.4326, 5.8281, 3.5493, 2.0458, 3.5529, 4.1121, 2.119, 7.0348, 2.1369, 2.2484, 4.5987, 1.8981, 3.4687, 0.0278, 3.8918, 4.6441, 3.2057, 0.0307, 2.0848, 3.7542, 7.271, 3.1615, 2.0757, 4.4172, 2.1205, 3.6335, 5.2876, 4.2907, 5.1389, 4.497, 4.0036, 3.4486, 2.127, 2.7025, 2.5278, 6.1397, 2.6493, 2.666, 1.9266, 1.8978, 4.2284, 2.3962, 2.6981, 4.5885, 4.5482, 4.0762, 3.7718, 0.0818, 0.1446, 3.5179, 7.3205, 5.2339, 3.7123, 6.4411, 3.5269, 4.1315, 3.5571, 2.3014, 0.1228, 2.1124, 3.6721, 3.2106, 2.5604, 5.5194, 4.0821, 2.4217, 2.5432, 1.9558, 2.4516, 4.178, 2.4047, 7.3594, 3.3339, 3.8501, 3.0709, 6.5594, 5.7738, 3.5085, 3.9116, 4.6085, 3.4905, 2.9281, 3.3449, 5.731, 6.4721, 6.9905, 4.0197, 4.5955, 3.4731, 5.0261, 5.2975, 2.4257, 0.1259, 1.9405, 3.1353, 2.8551, 4.9041, 4.093, 3.7752, 6.1048, 3.4308, 7.229, 2.8623, 0.0889, 5.8257, 2.8565, 2.2047, 1.9961, 4.0262, 2.3682, 3.9328, 6.5112, 2.5066, 1.9919, 4.479, 1.99, 3.4853, 4.8474, 2.8348, 2.8396, 5.9925, 3.3722, 0.1409, 3.5285, 2.6255, 2.2467, 6.9822, 2.443, 4.9716, 2.7141, 1.9956, 3.5274, 7.0472, 4.0209, 2.4093, 2.6686, 7.4172, 3.7871, 4.7703, 3.9191, 6.7913, 4.0637, 4.5546, 3.371, 6.0646]', 'null');
INSERT INTO public.answers VALUES (21, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Let us look at ball stage by stage — starting with the basics.

1. Start with the two quantities: 1.10 and 1.
2. Combine them: 1.10 + 1 = 2.10.
3. Check the result: it is consistent with the limit in the', 'length', 60, 64, 0.003933735999964938, 0.003974069999969743, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (21, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, 'Let us look at ball stage by step — starting with the basics.

1. Start with the two quantities: 1.10 and 1.
2. Combine them: 1.10 + 1 = 2.10.
3.', 'stop', 60, 53, 0.00692206499996928, 0.006940687999986039, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (22, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Let us look at razzies step by step — starting with the basics.

The main risk is a careful goal that nobody checks. Most estimates put the figure at about 838 kilograms, although sources vary.

1. **Example**: Follow the careful effect first, then check the example again.
', 'length', NULL, NULL, 0.0036150249999877815, 0.003659228999993047, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (22, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, 'Let us look at razzies step by step — starting with the basics.

The main risk is a careful goal that nobody checks. Most estimates put the figure at about 838 kilograms, although sources vary.

1. **Example**: Follow the careful effect first, then check the example again.
', 'length', NULL, NULL, 0.01724538400003439, 0.01728345399999398, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (22, 'replica', NULL, 200, NULL, 'Let us look at razzies step by step — starting with the basics.

The main risk is a careful goal that nobody checks. Most estimates put the figure at about 838 kilograms, although sources vary.

1. **Example**: Follow the careful effect first, then check the example again.
', 'length', NULL, NULL, 0.01514270000001261, 0.015158375999988039, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (23, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Here is a short answer about restaurant — with the key points first.

A useful way to think about restaurant is as a resource with 8 parts. The broad part of restaurant is how it defines the schedule. In practice, roughly 86 percent of cases depend on', 'length', 52, 64, 0.009803986000008535, 0.00983227500000794, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (23, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, 'Here is a short answer about restaurant — with the key points first.

A useful way to think about restaurant is as a resource with 8 parts. The broad part of restaurant is how it defines the schedule. In practice, roughly 86 percent of cases depend on', 'length', 52, 64, 0.034008496000012656, 0.0340189789999954, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (23, 'replica', NULL, 200, NULL, 'Here is a short answer about restaurant — with the key points first.

A useful way to think about restaurant is as a resource with 8 parts. The broad part of restaurant is how it defines the schedule. In practice, roughly 86 percent of cases depend on', 'length', 52, 64, 0.02828705799998943, 0.028308293000009144, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (24, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Let us look at function step by step — starting with the basics.

```python
def function(items):
    """Sum the lengths of the first 61 items."""
    total = 0
    for item in items[:61]:
        total +', 'length', NULL, NULL, 0.0060204569999768864, 0.00606618299997308, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (24, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, 'Let us look at function step by step — starting with the basics.

```python
def function(items):
    """Sum the lengths of the first 61 items."""
    total = 0
    for item in items[:61]:
        total +', 'length', NULL, NULL, 0.011564845999998852, 0.01157472099998813, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (24, 'replica', NULL, 200, NULL, 'Let us look at function step by step — starting with the basics.

```python
def function(items):
    """Sum the lengths of the first 61 items."""
    total = 0
    for item in items[:61]:
        total +', 'length', NULL, NULL, 0.011028854000016963, 0.011045029000001705, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (25, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Here is a short answer about returns — with the key points first.

```sql
SELECT category, COUNT(*) AS total
FROM returns
WHERE value > 29
GROUP BY category
ORDER BY total DESC;
```

When the choice changes,', 'length', 50, 64, 0.001575123000009171, 0.0015975860000025932, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (28, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, 'Summary — the text is about summarize, main, argument. It gives a figure of 54 and argues that the technique matters. When the plan changes, the step usually limits within 22 minutes. For example, a risk of 87.4 kilometers defines a recent measure.', 'stop', NULL, NULL, 0.006339329000013549, 0.006374010000001817, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (28, 'replica', NULL, 200, NULL, 'Summary — the text is about summarize, main, argument. It gives a figure of 54 and argues that the method matters. When the plan changes, the step typically limits within 22 minutes. For example, a risk of 87.4 kilometers defines a recent measure.', 'stop', NULL, NULL, 0.0069770400000379595, 0.006988603000024796, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (29, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Translation — «Thié lobrery upins et noni on thié murnong endé clusisé et soxé on thié ivinong.» (15 words)

It is often helpful to reduce the benefit before looking at the effect.', 'stop', 46, 59, 0.005243128000017805, 0.00525787300000502, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (29, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, 'Translation — «Thié lobrery upins et noni on thié murnong endé clusisé et sox soxé on thié ivinong.» (15 words)

It is often helpful to reduce the benefit before looking at the effect.', 'stop', 46, 60, 0.004886925999983305, 0.00489437999999609, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (29, 'replica', NULL, 200, NULL, 'Translation — «Thié lobrery upins et noni on thié murnong endé clusisé et soxé on thié ivinong.» (15 words)

It is often helpful to reduce the benefit before looking at the effect.', 'stop', 46, 59, 0.004588055999988683, 0.004599446999975498, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (30, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Translation — «Pliesié sind mi thié ripurté bifurié frodeyé su thet cené rivoiwé ot.» (12 words)

The direct part of translate is how it reduces the level.', 'stop', NULL, NULL, 0.0066009310000367805, 0.006622152000034021, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (30, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, 'Translation — «Pliesié sind mi thié ripurté bifurié frodeyé su thet cené rivoiwé ot.» (12 words)

The direct part of translate is how it reduces the level.', 'stop', NULL, NULL, 0.0069811230000027535, 0.0069915690000357245, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (30, 'replica', NULL, 200, NULL, 'Translation — «Pliesié sind mi thié ripurté bifurié frodeyé su thet cené rivoiwé ot.» (12 words)

The direct part of translate is how it reduces the level.', 'stop', NULL, NULL, 0.007143745999997009, 0.007151888000009876, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (31, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, '```json
{
  "topic": "names",
  "count": 2,
  "year": 1966,
  "score": 4.6,
  "items": [
    "effect",
    "limit",

    "question"
', 'length', 72, 64, 0.003551483000023836, 0.0035689820000470718, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (31, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, '```json
{
  "topic": "names",
  "count": 2,
  "year": 1967,

  "score": 4.6,
  "items": [

    "effect",
    "limit",
    "question"
', 'length', 72, 64, 0.007192278999980317, 0.00720611200000576, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (32, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, '```json
{
  "topic": "extract",
  "count": 39,
  "year": 2007,
  "score": 6.4,
  "items": [
    "level",
    "context",
    "change', 'length', NULL, NULL, 0.001964082000029066, 0.0019826330000114467, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (32, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, '```json
{
  "topic": "extract",
  "count": 39,
  "year": 2007,
  "score": 6.4,

  "items": [

    "level",
    "context",
    "change', 'length', NULL, NULL, 0.012053817999969851, 0.012064524999971127, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (32, 'replica', NULL, 200, NULL, '```json
{
  "topic": "extract",
  "count": 39,
  "year": 2007,
  "score": 6.4,
  "items": [
    "level",
    "context",
    "change', 'length', NULL, NULL, 0.004423421000012695, 0.004448313000011694, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (33, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Label: Positive

Confidence: 0.68. A useful way to think about sentiment is as a method with 3 parts.', 'stop', 61, 31, 0.00667651300000216, 0.0067050569999764775, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (33, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, 'Label: Positive

Confidence: 0.68. A useful useful way to think about sentiment is as a method with 3 parts.', 'stop', 61, 32, 0.01719363600000179, 0.01721243899999081, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (33, 'replica', NULL, 200, NULL, 'Label: Positive

Confidence: 0.68. A useful way to think about sentiment is as a method with 3 parts.', 'stop', 61, 31, 0.010914527000011276, 0.010946165000007113, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (34, 'baseline', 'Qwen/Qwen3-8B', 200, NULL, 'Label: Yes

Confidence: 0.91. It is often helpful to shape the schedule before looking at the process.', 'stop', NULL, NULL, 0.009212557000012112, 0.009245982999971147, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (34, 'candidate', 'Qwen/Qwen3-8B-FP8', 200, NULL, 'Label: Yes
Confidence: 0.91. It is often helpful to shape the schedule before looking at the process.', 'stop', NULL, NULL, 0.013591450999967947, 0.01359955799995305, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (34, 'replica', NULL, 200, NULL, 'Label: Yes

Confidence: 0.91. It is often helpful to shape the schedule before looking at the process.', 'stop', NULL, NULL, 0.01311264299999948, 0.013127121000025, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (35, 'baseline', NULL, NULL, NULL, 'The answer is 42.', NULL, NULL, NULL, NULL, NULL, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (35, 'candidate', NULL, NULL, NULL, 'The answer is 43.', NULL, NULL, NULL, NULL, NULL, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (36, 'baseline', NULL, NULL, NULL, 'Paris is the capital of France.', NULL, NULL, NULL, NULL, NULL, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (36, 'candidate', NULL, NULL, NULL, 'Paris is the capital of France!', NULL, NULL, NULL, NULL, NULL, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (37, 'baseline', NULL, NULL, NULL, 'Same.', NULL, NULL, NULL, NULL, NULL, 1, 'null', 'null', 'null');
INSERT INTO public.answers VALUES (37, 'candidate', NULL, NULL, NULL, 'Same.', NULL, NULL, NULL, NULL, NULL, 1, 'null', 'null', 'null');


--
-- Data for Name: pairs; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.pairs VALUES (1, '428bf49e5695454f84eb1a123017e72a', 'reasoning-1', 1, 'reasoning', '/v1/chat/completions', 'A bat and a ball cost $1.10 in total. The bat costs $1.00 more than the ball. How much does the ball cost? Explain your reasoning.', '{"messages": [{"role": "user", "content": "A bat and a ball cost $1.10 in total. The bat costs $1.00 more than the ball. How much does the ball cost? Explain your reasoning."}]}', true, 'divergent', 0.7659574468085106, NULL, 144, 52, 0.6206896551724138, 3.7499, 'identical', 1, '2026-12-03 13:24:46.865941+00', '[{"kind": "numbers", "value": {"baseline_only": ["2.10"], "candidate_only": []}, "reason": "only the baseline says 2.10"}, {"kind": "length", "value": 0.621, "reason": "the candidate is 0.62x the baseline''s length"}, {"kind": "divergence", "value": {"char": 144, "token": 52, "margin": 3.7499}, "reason": "the answers part at token 52, where the top-1/top-2 margin was 3.75 (a confident change)"}]', 'factual', 110, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (2, '428bf49e5695454f84eb1a123017e72a', 'reasoning-2', 2, 'reasoning', '/v1/chat/completions', 'If all bloops are razzies and all razzies are lazzies, are all bloops definitely lazzies? Explain step by step.', '{"messages": [{"role": "user", "content": "If all bloops are razzies and all razzies are lazzies, are all bloops definitely lazzies? Explain step by step."}]}', true, 'near', 0.9850187265917603, NULL, 597, 143, 0.9925373134328358, 0.1582, 'identical', 1, '2026-12-03 13:24:46.865941+00', '[{"kind": "divergence", "value": {"char": 597, "token": 143, "margin": 0.1582}, "reason": "the answers part at token 143, where the top-1/top-2 margin was 0.16 (a near-tie: likely benign numerics)"}]', 'wording', 15, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (3, '428bf49e5695454f84eb1a123017e72a', 'reasoning-3', 3, 'reasoning', '/v1/chat/completions', 'Three friends split a restaurant bill unevenly. Describe a fair way to decide who pays what, and why it is fair.', '{"messages": [{"role": "user", "content": "Three friends split a restaurant bill unevenly. Describe a fair way to decide who pays what, and why it is fair."}]}', true, 'near', 0.9964994165694282, NULL, 464, 117, 1.0070257611241218, 5.8646, 'identical', 1, '2026-12-03 13:24:47.059265+00', '[{"kind": "repetition", "value": {"baseline_only": [], "candidate_only": ["first first"]}, "reason": "the candidate repeats ''first first''"}, {"kind": "divergence", "value": {"char": 464, "token": 117, "margin": 5.8646}, "reason": "the answers part at token 117, where the top-1/top-2 margin was 5.86 (a confident change)"}]', 'minor', 65, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (4, '428bf49e5695454f84eb1a123017e72a', 'code-1', 4, 'code', '/v1/chat/completions', 'Write a Python function that returns the n-th Fibonacci number iteratively, with a docstring.', '{"messages": [{"role": "user", "content": "Write a Python function that returns the n-th Fibonacci number iteratively, with a docstring."}]}', true, 'error', NULL, NULL, NULL, NULL, NULL, NULL, 'identical', 1, '2026-12-03 13:24:47.059265+00', 'null', NULL, 0, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (5, '428bf49e5695454f84eb1a123017e72a', 'code-2', 5, 'code', '/v1/chat/completions', 'Write a SQL query that returns the ten customers with the highest total order value from tables customers and orders.', '{"messages": [{"role": "user", "content": "Write a SQL query that returns the ten customers with the highest total order value from tables customers and orders."}]}', true, 'divergent', 0.8762886597938144, NULL, 255, 73, 0.7798165137614679, 2.8366, 'identical', 1, '2026-12-03 13:24:47.059265+00', '[{"kind": "length", "value": 0.78, "reason": "the candidate is 0.78x the baseline''s length"}, {"kind": "divergence", "value": {"char": 255, "token": 73, "margin": 2.8366}, "reason": "the answers part at token 73, where the top-1/top-2 margin was 2.84 (a confident change)"}]', 'minor', 50, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (6, '428bf49e5695454f84eb1a123017e72a', 'code-3', 7, 'code', '/v1/chat/completions', 'Implement a JavaScript function that removes duplicate values from an array while keeping their order.', '{"messages": [{"role": "user", "content": "Implement a JavaScript function that removes duplicate values from an array while keeping their order."}]}', true, 'equivalent', 0.9954887218045113, NULL, 202, 65, 1.0030120481927711, 0.0327, 'identical', 1, '2026-12-03 13:24:47.059265+00', '[{"kind": "divergence", "value": {"char": 202, "token": 65, "margin": 0.0327}, "reason": "the answers part at token 65, where the top-1/top-2 margin was 0.03 (a near-tie: likely benign numerics)"}]', 'equivalent', 5, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (7, '428bf49e5695454f84eb1a123017e72a', 'summarization-1', 8, 'summarization', '/v1/chat/completions', 'Summarize in three sentences: The city council approved a budget of 2.1 million dollars for new bike lanes. Construction starts in March and should take 14 months. Critics argue the money should go to bus routes instead.', '{"messages": [{"role": "user", "content": "Summarize in three sentences: The city council approved a budget of 2.1 million dollars for new bike lanes. Construction starts in March and should take 14 months. Critics argue the money should go to bus routes instead."}]}', true, 'error', NULL, NULL, NULL, NULL, NULL, NULL, 'identical', 1, '2026-12-03 13:24:47.059265+00', 'null', NULL, 0, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (8, '428bf49e5695454f84eb1a123017e72a', 'summarization-2', 9, 'summarization', '/v1/chat/completions', 'Summarize the main argument of this paragraph: Remote work reduces commuting time by an average of 54 minutes a day, but many employees report feeling isolated and less connected to their teams.', '{"messages": [{"role": "user", "content": "Summarize the main argument of this paragraph: Remote work reduces commuting time by an average of 54 minutes a day, but many employees report feeling isolated and less connected to their teams."}]}', true, 'near', 0.9616161616161616, NULL, 99, 28, 1.0040485829959513, 0.1386, 'identical', 1, '2026-12-03 13:24:47.059265+00', '[{"kind": "divergence", "value": {"char": 99, "token": 28, "margin": 0.1386}, "reason": "the answers part at token 28, where the top-1/top-2 margin was 0.14 (a near-tie: likely benign numerics)"}]', 'wording', 15, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (9, '428bf49e5695454f84eb1a123017e72a', 'translation-1', 10, 'translation', '/v1/chat/completions', 'Translate into French: The library opens at nine in the morning and closes at six in the evening.', '{"messages": [{"role": "user", "content": "Translate into French: The library opens at nine in the morning and closes at six in the evening."}]}', true, 'error', NULL, NULL, NULL, NULL, NULL, NULL, 'identical', 1, '2026-12-03 13:24:47.059265+00', 'null', NULL, 0, NULL, NULL, 'minor', 'candidate', 'the candidate repeats a word');
INSERT INTO public.pairs VALUES (10, '428bf49e5695454f84eb1a123017e72a', 'translation-2', 11, 'translation', '/v1/chat/completions', 'Translate into German: Please send me the report before Friday so that I can review it.', '{"messages": [{"role": "user", "content": "Translate into German: Please send me the report before Friday so that I can review it."}]}', true, 'identical', 1, 1, NULL, NULL, 1, NULL, 'identical', 1, '2026-12-03 13:24:47.059265+00', '[]', 'equivalent', 0, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (11, '428bf49e5695454f84eb1a123017e72a', 'extraction-1', 12, 'extraction', '/v1/chat/completions', 'Extract the names, dates and amounts from this text as JSON: On 12 May 2023, Alice Martin paid 450 euros to Bob Stone for the 2022 audit.', '{"messages": [{"role": "user", "content": "Extract the names, dates and amounts from this text as JSON: On 12 May 2023, Alice Martin paid 450 euros to Bob Stone for the 2022 audit."}]}', true, 'error', NULL, NULL, NULL, NULL, NULL, NULL, 'identical', 1, '2026-12-03 13:24:47.059265+00', 'null', NULL, 0, NULL, NULL, 'wording', NULL, 'same content');
INSERT INTO public.pairs VALUES (12, '428bf49e5695454f84eb1a123017e72a', 'extraction-2', 13, 'extraction', '/v1/chat/completions', 'Extract the product, price and quantity as JSON: Order 5512 contains 3 units of the Falcon X2 headset at 79.90 dollars each.', '{"messages": [{"role": "user", "content": "Extract the product, price and quantity as JSON: Order 5512 contains 3 units of the Falcon X2 headset at 79.90 dollars each."}]}', true, 'error', NULL, NULL, NULL, NULL, NULL, NULL, 'identical', 1, '2026-12-03 13:24:47.233779+00', 'null', NULL, 0, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (13, '428bf49e5695454f84eb1a123017e72a', 'classification-1', 14, 'classification', '/v1/chat/completions', 'Classify the sentiment of this review as positive, negative or neutral: The battery lasts all day, but the screen scratches far too easily.', '{"messages": [{"role": "user", "content": "Classify the sentiment of this review as positive, negative or neutral: The battery lasts all day, but the screen scratches far too easily."}]}', true, 'near', 0.9665071770334929, NULL, 44, 15, 1.0693069306930694, 2.9265, 'identical', 1, '2026-12-03 13:24:47.233779+00', '[{"kind": "repetition", "value": {"baseline_only": [], "candidate_only": ["useful useful"]}, "reason": "the candidate repeats ''useful useful''"}, {"kind": "divergence", "value": {"char": 44, "token": 15, "margin": 2.9265}, "reason": "the answers part at token 15, where the top-1/top-2 margin was 2.93 (a confident change)"}]', 'minor', 65, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (14, '428bf49e5695454f84eb1a123017e72a', 'classification-2', 15, 'classification', '/v1/chat/completions', 'Answer yes or no: Is the following sentence a question? The meeting has been moved to Thursday.', '{"messages": [{"role": "user", "content": "Answer yes or no: Is the following sentence a question? The meeting has been moved to Thursday."}]}', true, 'equivalent', 0.9950738916256158, NULL, 11, 3, 0.9901960784313726, 0.1777, 'identical', 1, '2026-12-03 13:24:47.233779+00', '[{"kind": "divergence", "value": {"char": 11, "token": 3, "margin": 0.1777}, "reason": "the answers part at token 3, where the top-1/top-2 margin was 0.18 (a near-tie: likely benign numerics)"}]', 'equivalent', 5, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (15, '428bf49e5695454f84eb1a123017e72a', 'classification-3', 16, 'classification', '/v1/chat/completions', 'Classify this support ticket into a category (billing, technical, account): I was charged twice for my subscription this month.', '{"messages": [{"role": "user", "content": "Classify this support ticket into a category (billing, technical, account): I was charged twice for my subscription this month."}]}', true, 'error', NULL, NULL, NULL, NULL, NULL, NULL, 'identical', 1, '2026-12-03 13:24:47.233779+00', 'null', NULL, 0, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (16, '428bf49e5695454f84eb1a123017e72a', 'math-1', 17, 'math', '/v1/chat/completions', 'Calculate 17 x 23 and show each step.', '{"messages": [{"role": "user", "content": "Calculate 17 x 23 and show each step."}]}', true, 'near', 0.9802197802197802, NULL, 151, 49, 1.0044052863436124, 0.0731, 'identical', 1, '2026-12-03 13:24:47.233779+00', '[{"kind": "divergence", "value": {"char": 151, "token": 49, "margin": 0.0731}, "reason": "the answers part at token 49, where the top-1/top-2 margin was 0.07 (a near-tie: likely benign numerics)"}]', 'wording', 15, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (17, '428bf49e5695454f84eb1a123017e72a', 'math-2', 18, 'math', '/v1/chat/completions', 'A train travels 240 kilometers in 3 hours. What is its average speed? Compute it and explain.', '{"messages": [{"role": "user", "content": "A train travels 240 kilometers in 3 hours. What is its average speed? Compute it and explain."}]}', true, 'near', 0.9936034115138592, NULL, 25, 6, 1.0042735042735043, 0.1672, 'identical', 1, '2026-12-03 13:24:47.233779+00', '[{"kind": "divergence", "value": {"char": 25, "token": 6, "margin": 0.1672}, "reason": "the answers part at token 6, where the top-1/top-2 margin was 0.17 (a near-tie: likely benign numerics)"}]', 'wording', 15, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (18, '428bf49e5695454f84eb1a123017e72a', 'math-3', 19, 'math', '/v1/chat/completions', 'What is 15 percent of 80? Solve it step by step.', '{"messages": [{"role": "user", "content": "What is 15 percent of 80? Solve it step by step."}]}', true, 'identical', 1, 1, NULL, NULL, 1, NULL, 'identical', 1, '2026-12-03 13:24:47.233779+00', '[]', 'equivalent', 0, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (19, '428bf49e5695454f84eb1a123017e72a', 'instructions-1', 20, 'instruction following', '/v1/chat/completions', 'List exactly 4 tips for writing clear commit messages, one line each.', '{"messages": [{"role": "user", "content": "List exactly 4 tips for writing clear commit messages, one line each."}]}', true, 'near', 0.9772079772079773, NULL, 497, 122, 1.011461318051576, 0.0889, 'identical', 1, '2026-12-03 13:24:47.233779+00', '[{"kind": "repetition", "value": {"baseline_only": ["first then check"], "candidate_only": []}, "reason": "the baseline repeats ''first then check''"}, {"kind": "divergence", "value": {"char": 497, "token": 122, "margin": 0.0889}, "reason": "the answers part at token 122, where the top-1/top-2 margin was 0.09 (a near-tie: likely benign numerics)"}]', 'minor', 50, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (20, '428bf49e5695454f84eb1a123017e72a', 'instructions-2', 21, 'instruction following', '/v1/chat/completions', 'Explain what a hash table is in no more than three sentences, without using the word ''array''.', '{"messages": [{"role": "user", "content": "Explain what a hash table is in no more than three sentences, without using the word ''array''."}]}', true, 'near', 0.9775280898876404, NULL, 432, 105, 1.0096774193548388, 0.0889, 'identical', 1, '2026-12-03 13:24:47.233779+00', '[{"kind": "divergence", "value": {"char": 432, "token": 105, "margin": 0.0889}, "reason": "the answers part at token 105, where the top-1/top-2 margin was 0.09 (a near-tie: likely benign numerics)"}]', 'wording', 15, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (21, 'f31a9e8717a740ec83a0ede9c85470de', 'a9ef7f76-1', 1, NULL, '/v1/chat/completions', 'A bat and a ball cost $1.10 in total. The bat costs $1.00 more than the ball. How much does the ball cost? Explain your reasoning.', '{"model": "Qwen/Qwen3-8B", "messages": [{"role": "user", "content": "A bat and a ball cost $1.10 in total. The bat costs $1.00 more than the ball. How much does the ball cost? Explain your reasoning."}], "max_tokens": 64, "temperature": 0.8, "stream": false}', false, 'divergent', 0.8275862068965517, NULL, 31, NULL, 0.7142857142857143, NULL, NULL, NULL, '2026-12-03 13:24:47.968033+00', '[{"kind": "truncation", "value": {"baseline": "length", "candidate": "stop"}, "reason": "the baseline was cut at the token limit"}, {"kind": "length", "value": 0.714, "reason": "the candidate is 0.71x the baseline''s length"}, {"kind": "divergence", "value": {"char": 31, "token": null, "margin": null}, "reason": "the answers part at character 31"}]', 'minor', 60, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (22, 'f31a9e8717a740ec83a0ede9c85470de', 'a9ef7f76-2', 2, NULL, '/v1/chat/completions', 'If all bloops are razzies and all razzies are lazzies, are all bloops definitely lazzies? Explain step by step.', '{"model": "Qwen/Qwen3-8B", "messages": [{"role": "user", "content": "If all bloops are razzies and all razzies are lazzies, are all bloops definitely lazzies? Explain step by step."}], "max_tokens": 64, "temperature": 0, "stream": true}', true, 'identical', 1, 1, NULL, NULL, 1, NULL, 'identical', 1, '2026-12-03 13:24:47.968033+00', '[]', 'equivalent', 0, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (23, 'f31a9e8717a740ec83a0ede9c85470de', 'a9ef7f76-3', 3, NULL, '/v1/chat/completions', 'Three friends split a restaurant bill unevenly. Describe a fair way to decide who pays what, and why it is fair.', '{"model": "Qwen/Qwen3-8B", "messages": [{"role": "user", "content": "Three friends split a restaurant bill unevenly. Describe a fair way to decide who pays what, and why it is fair."}], "max_tokens": 64, "temperature": 0, "stream": false}', true, 'identical', 1, 1, NULL, NULL, 1, NULL, 'identical', 1, '2026-12-03 13:24:47.968033+00', '[]', 'equivalent', 0, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (24, 'f31a9e8717a740ec83a0ede9c85470de', 'a9ef7f76-4', 4, NULL, '/v1/chat/completions', 'Write a Python function that returns the n-th Fibonacci number iteratively, with a docstring.', '{"model": "Qwen/Qwen3-8B", "messages": [{"role": "user", "content": "Write a Python function that returns the n-th Fibonacci number iteratively, with a docstring."}], "max_tokens": 64, "temperature": 0, "stream": true}', true, 'identical', 1, 1, NULL, NULL, 1, NULL, 'identical', 1, '2026-12-03 13:24:47.968033+00', '[]', 'equivalent', 0, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (25, 'f31a9e8717a740ec83a0ede9c85470de', 'a9ef7f76-5', 5, NULL, '/v1/chat/completions', 'Write a SQL query that returns the ten customers with the highest total order value from tables customers and orders.', '{"model": "Qwen/Qwen3-8B", "messages": [{"role": "user", "content": "Write a SQL query that returns the ten customers with the highest total order value from tables customers and orders."}], "max_tokens": 64, "temperature": 0, "stream": false}', true, 'identical', 1, 1, NULL, NULL, 1, NULL, 'identical', 1, '2026-12-03 13:24:47.968033+00', '[]', 'equivalent', 0, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (26, 'f31a9e8717a740ec83a0ede9c85470de', 'a9ef7f76-6', 6, NULL, '/v1/chat/completions', 'Implement a JavaScript function that removes duplicate values from an array while keeping their order.', '{"model": "Qwen/Qwen3-8B", "messages": [{"role": "user", "content": "Implement a JavaScript function that removes duplicate values from an array while keeping their order."}], "max_tokens": 64, "temperature": 0.8, "stream": true}', false, 'near', 0.9900497512437811, NULL, 26, NULL, 1, NULL, NULL, NULL, '2026-12-03 13:24:47.968033+00', '[{"kind": "divergence", "value": {"char": 26, "token": null, "margin": null}, "reason": "the answers part at character 26"}]', 'wording', 20, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (27, 'f31a9e8717a740ec83a0ede9c85470de', 'a9ef7f76-7', 7, NULL, '/v1/chat/completions', 'Summarize in three sentences: The city council approved a budget of 2.1 million dollars for new bike lanes. Construction starts in March and should take 14 months. Critics argue the money should go to bus routes instead.', '{"model": "Qwen/Qwen3-8B", "messages": [{"role": "user", "content": "Summarize in three sentences: The city council approved a budget of 2.1 million dollars for new bike lanes. Construction starts in March and should take 14 months. Critics argue the money should go to bus routes instead."}], "max_tokens": 64, "temperature": 0, "stream": false}', true, 'near', 0.9573283858998145, NULL, 188, NULL, 1.0111940298507462, NULL, 'identical', 1, '2026-12-03 13:24:47.968033+00', '[{"kind": "divergence", "value": {"char": 188, "token": null, "margin": null}, "reason": "the answers part at character 188"}]', 'wording', 20, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (28, 'f31a9e8717a740ec83a0ede9c85470de', 'a9ef7f76-8', 8, NULL, '/v1/chat/completions', 'Summarize the main argument of this paragraph: Remote work reduces commuting time by an average of 54 minutes a day, but many employees report feeling isolated and less connected to their teams.', '{"model": "Qwen/Qwen3-8B", "messages": [{"role": "user", "content": "Summarize the main argument of this paragraph: Remote work reduces commuting time by an average of 54 minutes a day, but many employees report feeling isolated and less connected to their teams."}], "max_tokens": 64, "temperature": 0, "stream": true}', true, 'near', 0.9616161616161616, NULL, 99, NULL, 1.0040485829959513, NULL, 'identical', 1, '2026-12-03 13:24:47.968033+00', '[{"kind": "divergence", "value": {"char": 99, "token": null, "margin": null}, "reason": "the answers part at character 99"}]', 'wording', 20, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (29, 'f31a9e8717a740ec83a0ede9c85470de', 'a9ef7f76-9', 9, NULL, '/v1/chat/completions', 'Translate into French: The library opens at nine in the morning and closes at six in the evening.', '{"model": "Qwen/Qwen3-8B", "messages": [{"role": "user", "content": "Translate into French: The library opens at nine in the morning and closes at six in the evening."}], "max_tokens": 64, "temperature": 0, "stream": false}', true, 'near', 0.989010989010989, NULL, 77, NULL, 1.0222222222222221, NULL, 'identical', 1, '2026-12-03 13:24:47.968033+00', '[{"kind": "divergence", "value": {"char": 77, "token": null, "margin": null}, "reason": "the answers part at character 77"}]', 'wording', 20, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (30, 'f31a9e8717a740ec83a0ede9c85470de', 'a9ef7f76-a', 10, NULL, '/v1/chat/completions', 'Translate into German: Please send me the report before Friday so that I can review it.', '{"model": "Qwen/Qwen3-8B", "messages": [{"role": "user", "content": "Translate into German: Please send me the report before Friday so that I can review it."}], "max_tokens": 64, "temperature": 0, "stream": true}', true, 'identical', 1, 1, NULL, NULL, 1, NULL, 'identical', 1, '2026-12-03 13:24:47.968033+00', '[]', 'equivalent', 0, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (31, 'f31a9e8717a740ec83a0ede9c85470de', 'a9ef7f76-b', 11, NULL, '/v1/chat/completions', 'Extract the names, dates and amounts from this text as JSON: On 12 May 2023, Alice Martin paid 450 euros to Bob Stone for the 2022 audit.', '{"model": "Qwen/Qwen3-8B", "messages": [{"role": "user", "content": "Extract the names, dates and amounts from this text as JSON: On 12 May 2023, Alice Martin paid 450 euros to Bob Stone for the 2022 audit."}], "max_tokens": 64, "temperature": 0.8, "stream": false}', false, 'near', 0.9811320754716981, NULL, 57, NULL, 1.0075757575757576, NULL, NULL, NULL, '2026-12-03 13:24:47.968033+00', '[{"kind": "numbers", "value": {"baseline_only": ["1966"], "candidate_only": ["1967"]}, "reason": "only the baseline says 1966; only the candidate says 1967"}, {"kind": "divergence", "value": {"char": 57, "token": null, "margin": null}, "reason": "the answers part at character 57"}]', 'factual', 100, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (32, 'f31a9e8717a740ec83a0ede9c85470de', 'a9ef7f76-c', 12, NULL, '/v1/chat/completions', 'Extract the product, price and quantity as JSON: Order 5512 contains 3 units of the Falcon X2 headset at 79.90 dollars each.', '{"model": "Qwen/Qwen3-8B", "messages": [{"role": "user", "content": "Extract the product, price and quantity as JSON: Order 5512 contains 3 units of the Falcon X2 headset at 79.90 dollars each."}], "max_tokens": 64, "temperature": 0, "stream": true}', true, 'equivalent', 0.9924242424242424, NULL, 79, NULL, 1.015267175572519, NULL, 'identical', 1, '2026-12-03 13:24:47.968033+00', '[{"kind": "divergence", "value": {"char": 79, "token": null, "margin": null}, "reason": "the answers part at character 79"}]', 'equivalent', 5, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (33, 'f31a9e8717a740ec83a0ede9c85470de', 'a9ef7f76-d', 13, NULL, '/v1/chat/completions', 'Classify the sentiment of this review as positive, negative or neutral: The battery lasts all day, but the screen scratches far too easily.', '{"model": "Qwen/Qwen3-8B", "messages": [{"role": "user", "content": "Classify the sentiment of this review as positive, negative or neutral: The battery lasts all day, but the screen scratches far too easily."}], "max_tokens": 64, "temperature": 0, "stream": false}', true, 'near', 0.9665071770334929, NULL, 44, NULL, 1.0693069306930694, NULL, 'identical', 1, '2026-12-03 13:24:47.968033+00', '[{"kind": "repetition", "value": {"baseline_only": [], "candidate_only": ["useful useful"]}, "reason": "the candidate repeats ''useful useful''"}, {"kind": "divergence", "value": {"char": 44, "token": null, "margin": null}, "reason": "the answers part at character 44"}]', 'minor', 55, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (34, 'f31a9e8717a740ec83a0ede9c85470de', 'a9ef7f76-e', 14, NULL, '/v1/chat/completions', 'Answer yes or no: Is the following sentence a question? The meeting has been moved to Thursday.', '{"model": "Qwen/Qwen3-8B", "messages": [{"role": "user", "content": "Answer yes or no: Is the following sentence a question? The meeting has been moved to Thursday."}], "max_tokens": 64, "temperature": 0, "stream": true}', true, 'equivalent', 0.9950738916256158, NULL, 11, NULL, 0.9901960784313726, NULL, 'identical', 1, '2026-12-03 13:24:47.968033+00', '[{"kind": "divergence", "value": {"char": 11, "token": null, "margin": null}, "reason": "the answers part at character 11"}]', 'equivalent', 5, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (35, 'af471652e2c048548c083190f7964e47', 'item-1', 1, NULL, '', '', '{}', true, 'near', 0.9411764705882353, NULL, 15, NULL, 1, NULL, NULL, NULL, '2026-12-03 13:24:50.629526+00', '[{"kind": "numbers", "value": {"baseline_only": ["42"], "candidate_only": ["43"]}, "reason": "only the baseline says 42; only the candidate says 43"}, {"kind": "divergence", "value": {"char": 15, "token": null, "margin": null}, "reason": "the answers part at character 15"}]', 'factual', 100, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (36, 'af471652e2c048548c083190f7964e47', 'item-2', 2, NULL, '', '', '{}', true, 'near', 0.967741935483871, NULL, 30, NULL, 1, NULL, NULL, NULL, '2026-12-03 13:24:50.633168+00', '[{"kind": "divergence", "value": {"char": 30, "token": null, "margin": null}, "reason": "the answers part at character 30"}]', 'wording', 20, NULL, NULL, NULL, NULL, NULL);
INSERT INTO public.pairs VALUES (37, 'af471652e2c048548c083190f7964e47', 'item-3', 3, NULL, '', '', '{}', true, 'identical', 1, 1, NULL, NULL, 1, NULL, NULL, NULL, '2026-12-03 13:24:50.633735+00', '[]', 'equivalent', 0, NULL, NULL, NULL, NULL, NULL);


--
-- Data for Name: reviews; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.reviews VALUES (1, 4, 'alice', 'factual', 'candidate', 'number flipped', '2026-12-03 13:24:50.866408+00');
INSERT INTO public.reviews VALUES (2, 7, 'alice', 'wording', NULL, '', '2026-12-03 13:24:50.874066+00');
INSERT INTO public.reviews VALUES (3, 9, 'bob', 'minor', NULL, 'repeated word', '2026-12-03 13:24:50.874976+00');
INSERT INTO public.reviews VALUES (4, 11, 'alice', 'ambiguous', NULL, '', '2026-12-03 13:24:50.875828+00');
INSERT INTO public.reviews VALUES (5, 12, 'bob', 'factual', 'baseline', 'the candidate fixed it', '2026-12-03 13:24:50.876528+00');
INSERT INTO public.reviews VALUES (6, 15, 'carol', 'improvement', NULL, '', '2026-12-03 13:24:50.87709+00');
INSERT INTO public.reviews VALUES (7, 7, 'bob', 'minor', NULL, 'disagree', '2026-12-03 13:24:50.877621+00');
INSERT INTO public.reviews VALUES (8, 21, 'dave', 'wording', NULL, '', '2026-12-03 13:24:50.881352+00');
INSERT INTO public.reviews VALUES (9, 27, 'dave', 'wording', NULL, '', '2026-12-03 13:24:50.886355+00');


--
-- Data for Name: run_counts; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.run_counts VALUES ('f31a9e8717a740ec83a0ede9c85470de', 'noise', 'identical', true, 11);
INSERT INTO public.run_counts VALUES ('f31a9e8717a740ec83a0ede9c85470de', 'pairs', 'divergent', false, 1);
INSERT INTO public.run_counts VALUES ('f31a9e8717a740ec83a0ede9c85470de', 'pairs', 'equivalent', true, 2);
INSERT INTO public.run_counts VALUES ('f31a9e8717a740ec83a0ede9c85470de', 'pairs', 'identical', true, 5);
INSERT INTO public.run_counts VALUES ('f31a9e8717a740ec83a0ede9c85470de', 'pairs', 'near', false, 2);
INSERT INTO public.run_counts VALUES ('f31a9e8717a740ec83a0ede9c85470de', 'pairs', 'near', true, 4);


--
-- Data for Name: runs; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.runs VALUES ('428bf49e5695454f84eb1a123017e72a', 'replay', '2026-12-03 13:24:46.686239+00', '2026-12-03 13:24:47.244241+00', '{"log": "/tmp/fixture/log.jsonl", "format": "bodies", "turn": 1, "endpoint": "/v1/chat/completions", "sides": {"baseline": {"url": "http://127.0.0.1:33299", "model": "Qwen/Qwen3-8B"}, "candidate": {"url": "http://127.0.0.1:46715", "model": "Qwen/Qwen3-8B-FP8"}, "replica": {"url": "http://127.0.0.1:34549", "model": "Qwen/Qwen3-8B"}}, "concurrency": 1, "overrides": {"temperature": 0.0, "max_tokens": 256, "stream": true, "logprobs": 2}, "thresholds": {"near": 0.9, "difflib_limit": 0}, "timeout": 300.0, "redact": [], "labels": {"gpu": "H100"}, "versions": {"baseline": "0.34.0", "candidate": "0.34.0", "replica": "0.34.0"}}');
INSERT INTO public.runs VALUES ('f31a9e8717a740ec83a0ede9c85470de', 'serve', '2026-12-03 13:24:47.63876+00', '2026-12-03 13:24:48.126735+00', '{"primary": "http://127.0.0.1:33299", "shadow": "http://127.0.0.1:38929", "primary_side": "baseline", "primary_model": null, "shadow_model": "Qwen/Qwen3-8B-FP8", "sample_rate": 1.0, "sample_header": null, "max_shadow_in_flight": 64, "shadow_timeout": 120.0, "keep_rate": 1.0, "thresholds": {"near": 0.9}, "labels": {"env": "staging"}, "replica": "http://127.0.0.1:34549", "replica_model": null, "replica_rate": 1.0, "sides": {"baseline": {"url": "http://127.0.0.1:33299", "model": null}, "candidate": {"url": "http://127.0.0.1:38929", "model": "Qwen/Qwen3-8B-FP8"}}}');
INSERT INTO public.runs VALUES ('af471652e2c048548c083190f7964e47', 'compare', '2026-12-03 13:24:50.626578+00', '2026-12-03 13:24:50.634536+00', '{"baseline": "/tmp/fixture/a.json", "candidate": "/tmp/fixture/b.json", "thresholds": {"near": 0.9}}');


--
-- Data for Name: secrets; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.secrets VALUES ('blind_key', '6a3e38c23f3da674f0bcca429af4eeecefee7f78ccc89b6d0acecb49bc2ddc1a');


--
-- Data for Name: skipped; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.skipped VALUES (1, '428bf49e5695454f84eb1a123017e72a', 6, 'not valid JSON: Expecting '','' delimiter: line 2 column 1 (char 26)');


--
-- Name: pairs_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.pairs_id_seq', 37, true);


--
-- Name: reviews_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.reviews_id_seq', 9, true);


--
-- Name: skipped_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.skipped_id_seq', 1, true);


--
-- Name: alembic_version alembic_version_pkc; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.alembic_version
    ADD CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num);


--
-- Name: answers answers_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.answers
    ADD CONSTRAINT answers_pkey PRIMARY KEY (pair_id, side);


--
-- Name: pairs pairs_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.pairs
    ADD CONSTRAINT pairs_pkey PRIMARY KEY (id);


--
-- Name: reviews reviews_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.reviews
    ADD CONSTRAINT reviews_pkey PRIMARY KEY (id);


--
-- Name: run_counts run_counts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.run_counts
    ADD CONSTRAINT run_counts_pkey PRIMARY KEY (run_id, of, outcome, comparable);


--
-- Name: runs runs_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.runs
    ADD CONSTRAINT runs_pkey PRIMARY KEY (id);


--
-- Name: secrets secrets_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.secrets
    ADD CONSTRAINT secrets_pkey PRIMARY KEY (name);


--
-- Name: skipped skipped_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.skipped
    ADD CONSTRAINT skipped_pkey PRIMARY KEY (id);


--
-- Name: pairs uq_pairs_run_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.pairs
    ADD CONSTRAINT uq_pairs_run_key UNIQUE (run_id, key);


--
-- Name: ix_pairs_run_outcome; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_pairs_run_outcome ON public.pairs USING btree (run_id, outcome);


--
-- Name: ix_pairs_run_priority; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_pairs_run_priority ON public.pairs USING btree (run_id, priority);


--
-- Name: ix_pairs_run_seq; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_pairs_run_seq ON public.pairs USING btree (run_id, seq);


--
-- Name: ix_reviews_pair; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_reviews_pair ON public.reviews USING btree (pair_id);


--
-- Name: ix_skipped_run; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_skipped_run ON public.skipped USING btree (run_id);


--
-- Name: answers answers_pair_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.answers
    ADD CONSTRAINT answers_pair_id_fkey FOREIGN KEY (pair_id) REFERENCES public.pairs(id) ON DELETE CASCADE;


--
-- Name: pairs pairs_run_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.pairs
    ADD CONSTRAINT pairs_run_id_fkey FOREIGN KEY (run_id) REFERENCES public.runs(id) ON DELETE CASCADE;


--
-- Name: reviews reviews_pair_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.reviews
    ADD CONSTRAINT reviews_pair_id_fkey FOREIGN KEY (pair_id) REFERENCES public.pairs(id) ON DELETE CASCADE;


--
-- Name: run_counts run_counts_run_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.run_counts
    ADD CONSTRAINT run_counts_run_id_fkey FOREIGN KEY (run_id) REFERENCES public.runs(id) ON DELETE CASCADE;


--
-- Name: skipped skipped_run_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.skipped
    ADD CONSTRAINT skipped_run_id_fkey FOREIGN KEY (run_id) REFERENCES public.runs(id) ON DELETE CASCADE;


--
-- PostgreSQL database dump complete
--


