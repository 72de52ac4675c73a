"""The fast channel's pattern tables (see `signals`), Chinese and English, and the sentence-shape
tests they rely on (questions, tag questions, hypotheticals, reported speech).

Rules match the trigger words (lookaheads check what has to follow), so `signals` can ask whether
the rest of the sentence says anything. Everything is case-insensitive, and an apostrophe in a
pattern also matches the typographic one phones type (I’m).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..text.lazy_pattern import LazyPattern, lazy

__all__ = [
    "EMPHASIS",
    "EMPHASIS_PREFIX",
    "EN_FORCED",
    "FILLER_PREFIX",
    "FORCED_PREFIXES",
    "HYPOTHETICAL",
    "NOT_A_CORRECTION",
    "NOT_OUR_DECISION",
    "OTHERS_SPEECH",
    "POLITE_REQUEST",
    "RULES",
    "ZH_FORCED",
    "ZH_FORCED_NOT_AN_ORDER",
    "Rule",
    "is_question",
    "re_alternatives",
    "statement",
    "strip_tag",
]


def re_alternatives(*alternatives: str) -> LazyPattern:
    """One case-insensitive pattern of the alternatives; an apostrophe also matches ’. Compiled
    when first used (see `lazy_pattern`)."""
    return lazy("|".join(alternatives).replace("'", "['’]"), re.IGNORECASE)


_re = re_alternatives


@dataclass(frozen=True)
class Rule:
    """One way of saying one kind of thing; `category` is the memory category it is stored as."""

    kind: str
    category: str
    pattern: LazyPattern


_END = r"(?=[，,。；;！!？?、\s（(]|$)"  # the end of a clause
_NOT_END = r"[^，,。；;！!？?]"  # any character inside the clause

_ROLES_ZH = (
    "工程师|程序员|开发者|开发|码农|架构师|设计师|产品经理|项目经理|经理|运维|测试|前端|后端|全栈|学生|大学生|"
    "研究生|博士生|博士|硕士|本科生|高中生|初中生|留学生|老师|教师|教授|讲师|医生|护士|律师|会计|作家|记者|编辑|"
    "翻译|创始人|合伙人|老板|总监|主管|研究员|科学家|分析师|顾问|销售|运营|公务员|主播|博主|摄影师|厨师|司机|"
    "宝妈|全职妈妈|家庭主妇|专家|画家|艺术家|企业家|音乐家|新手|小白|菜鸟|"
    "[\u4e00-\u9fff]{1,4}(?:者|师|员)|(?<![一个好坏这那的啥哪])人|"
    "PM|CTO|CEO|COO|CFO|SRE|DBA|QA|HR|PhD|[A-Za-z]+ ?(?:engineer|developer|dev)"
)
_ROLES_EN = (
    "engineer|developer|dev|programmer|coder|architect|designer|student|undergrad|undergraduate|teacher|"
    "professor|lecturer|tutor|researcher|scientist|doctor|physician|surgeon|dentist|nurse|pharmacist|lawyer|"
    "attorney|accountant|writer|author|journalist|editor|translator|founder|co-founder|cofounder|ceo|cto|cfo|"
    "coo|vp|manager|director|lead|consultant|analyst|investor|trader|entrepreneur|freelancer|contractor|intern|"
    "sre|devops|sysadmin|administrator|admin|phd|postdoc|artist|musician|photographer|chef|parent|mom|mum|dad|"
    "father|mother|beginner|newbie|novice|hobbyist|retiree|veteran|pilot|farmer|specialist|"
    "expert|owner|maintainer|contributor|tester|native speaker"
)
_REL_ZH = (
    "老婆|妻子|太太|媳妇|爱人|老公|丈夫|先生|男朋友|女朋友|男友|女友|对象|未婚妻|未婚夫|儿子|女儿|孩子|宝宝|闺女|"
    "爸爸|妈妈|父亲|母亲|爸|妈|哥哥|姐姐|弟弟|妹妹|爷爷|奶奶|外公|外婆|姥姥|姥爷|岳父|岳母|公公|婆婆|同事|老板|"
    "领导|上司|主管|朋友|好朋友|闺蜜|室友|同学|导师|猫咪|狗狗|猫|狗|搭档|合伙人|客户|团队"
)
_REL_EN = (
    "wife|husband|partner|spouse|boyfriend|girlfriend|fianc[eé]e?|son|daughter|kids?|children|child|baby|mom|"
    "mum|mother|dad|father|parents|brother|sister|siblings?|grandma|grandmother|grandpa|grandfather|boss|"
    "manager|colleague|coworker|co-worker|teammate|best friend|friend|roommate|flatmate|cat|dog|puppy|kitten|"
    "mentor|advisor|supervisor|client|cofounder|co-founder|team|family"
)
_ADV_ZH = (
    "(?:一直|一般|通常|平时|平常|比较|特别|非常|很|最|真的|还是|更|也|都|向来|从来|总是|其实|本来|超|挺|实在|"
    "完全|根本|绝对|个人|自己|基本上?|只|就|还|比起[^，,。]{1,10})*"
)
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_WHEN_ZH = (
    "明天|明早|明晚|今晚|今天|后天|下周[一二三四五六日天]?|下个?月|下礼拜|周[一二三四五六日天末]|"
    "星期[一二三四五六日天]|这周|本周|月底|年底|待会儿?|一会儿?|晚点|回头|周末"
)
_WHEN_EN = (
    rf"by|before|until|tomorrow|tonight|today|this (?:week|weekend|afternoon|evening|morning|month)|"
    rf"next (?:week|month|year|{_WEEKDAYS})|on (?:{_WEEKDAYS})|{_WEEKDAYS}|eod|eow|asap"
)

_CORRECTION = _re(
    rf"不是{_NOT_END}{{1,30}}?(?:[，,]\s*(?:而|其实|实际上|应该|应当)?是|而是)",
    rf"(?<![这那就还也都])是{_NOT_END}{{1,30}}?[，,]\s*(?:而)?不是",
    r"(?:其实|实际上)(?:我)?是(?!想|要|问|说|在问|在说|因为|这样)",
    r"(?:搞|弄|说|记|写|看|算|理解|听)错了|口误",
    r"(?:你|我)(?:之前|刚才|上次)?(?:说|记|写)的(?:不对|有误|错了)",
    r"更正(?!确)(?:一下)?|纠正(?:一下)?|订正(?:一下)?|^不对[，,：:]|应该是[^，,。]{1,30}?才对",
    r"\bcorrection\b\s*[:：,-]|\bto correct (?:myself|that|this|what i said)\b|\blet me correct\b",
    r"\bi meant\b|\bwhat i meant (?:was|is)\b|\bi misspoke\b|\bi was wrong\b|\bi got (?:it|that) wrong\b",
    r"\bmy (?:mistake|bad)\b|\bi made a (?:mistake|typo)\b|\bsorry,? (?:i meant|it's|it is|that should)\b",
    r"\byou(?:'re| are| got it| got that| have it)? (?:wrong|mistaken|incorrect)\b",
    r"\b(?:that|this|it)(?:'s| is| was) (?:not (?:right|correct|true)|wrong|incorrect)\b",
    r"\bnot\s+(?!only\b|just\b|bad\b|sure\b|really\b|that\b|too\b|very\b|quite\b|much\b)[^,.;!?]{1,40}?,?\s+but\s+(?!also\b)",
    r"\b(?:is|was|it's|that's|i'm|are|were|on|at)\s+[^,.;!?]{1,40}?,\s*not\s+(?!sure\b|really\b|yet\b|only\b|just\b|that\b|too\b)",
    r"\bactually,?\s+(?:it's|it is|it was|its|that's|that was|the|my|i'm|i am|i live|i work|we|our|i use)\b"
    r"(?!\s+(?:a |an )?(?:great|good|nice|fine|ok|okay|cool|right|true|correct|interesting|perfect|helpful"
    r"|not sure|sorry|just|curious|wondering|asking)\b)",
    r"\bshould (?:be|have been)\b[^,.;!?]{1,40}?,?\s+not\b",
)

_IDENTITY = _re(
    rf"我(?:现在|目前|其实|本身|也|就|本来)?是(?!说|指|想|问|在|不是|否|来|要|觉得|因为|不|个人)"
    rf"(?=(?:一[个名位]|个|名)?{_NOT_END}{{0,16}}?(?:{_ROLES_ZH})(?:党|出身)?(?:的|{_END}))",
    rf"我是(?=(?:做|搞|干|学|教|写|卖|开){_NOT_END}{{1,12}}的(?:人|那行)?{_END})",
    r"我叫(?!了|你|他|她|它|们|人|车|外卖|过|醒|上|来|去|啥|什么|个|一|着)(?=\s?[\u4e00-\u9fffA-Za-z·])",
    r"我(?:的)?(?:名字|全名|英文名|中文名|网名|昵称|花名)(?:是|叫)",
    rf"我姓(?=[\u4e00-\u9fff]{{1,2}}(?:叫|名|单名|{_END}))",
    rf"我(?:现在|目前|一直|之前|平时)?(?:是)?在(?!工作|上班|想|问|说|找|用|学|看|做|等|写|开|吃|喝|路上|忙|考虑|准备|换|申请|面试|辞|犹豫|纠结)"
    rf"(?={_NOT_END}{{1,20}}?(?:工作|上班|实习|任职|就职|上学|读书|读研|读博|念书|教书))",
    r"我(?:现在|目前|一直|之前|平时)?(?:住在|住(?!院|了|不|过|下|得|址|宿|手|口|嘴|的)|定居在?|生活在|常驻)"
    r"(?=\s?[\u4e00-\u9fffA-Za-z])",
    r"我(?:来自|老家(?:是|在)|家(?:在|住在?)(?=\s?[\u4e00-\u9fffA-Za-z])|出生(?:在|于)|(?:是)?在[^，,。]{1,8}长大)",
    rf"我(?:今年|现在|已经)?(?:\d{{1,3}}|[一二三四五六七八九十]{{1,3}})岁(?:了)?{_END}",
    r"我的(?:职业|工作|专业|职位|岗位|母语|身份|籍贯|学历)是",
    r"\bmy name(?:'s| is)\b|\bi(?:'m| am) called\b|(?-i:\b[Cc]all me [A-Z][a-z]+)",
    r"\bi (?:currently |now |still )?live in\b|\bi(?:'m| am) (?:currently |now )?(?:living|based|located|settled) in\b",
    r"\bi(?:'ve| have) (?:lived|been living) in\b|\bi come from\b|\bi grew up in\b|\bi was born in\b",
    r"\bi(?:'m| am) (?:originally )?from\b(?! (?:the (?:future|past)|home|work)\b)",
    r"\bi (?:currently |now |still )?work (?:at|for|as|remotely from)\b",
    r"\bi(?:'m| am) (?:currently |now )?(?:working|employed|interning) (?:at|for|as)\b",
    rf"\bi(?:'m| am) (?:a|an|the)\s+(?:[\w-]+\s+){{0,3}}?(?:{_ROLES_EN})s?\b",
    r"\bi(?:'m| am) \d{1,3}(?: years old| y/?o)\b|\bi major in\b|\bi(?:'m| am) majoring in\b",
    r"\bmy (?:job|role|title|profession|occupation|major|native language|mother tongue|first language) is\b",
)

_RELATIONSHIP = _re(
    rf"我(?:的)?(?:家)?(?:{_REL_ZH})(?=[\u4e00-\u9fffA-Za-z·]{{0,4}}?(?:叫|名字|是|喜欢|爱吃|爱喝|讨厌|不喜欢|不吃|不喝|"
    rf"对[^，,。]{{1,8}}过敏|在{_NOT_END}{{1,15}}(?:工作|上班|上学|读书|读研)|住在|今年|生日|属|比我))",
    rf"我有(?:一个|个|两个|一只|只|一位|位)?(?:{_REL_ZH})",
    rf"\bmy (?:{_REL_EN})\b(?=(?:'s name| \w+)?(?:'s| is| was| likes| loves| hates| prefers| works| lives|"
    r" can't| cannot| doesn't| does not| studies| goes to| has| was born| turns| just turned)\b)",
    rf"\bi have (?:a|an|two|three|\d) (?:{_REL_EN})s?\b",
)

_PREFERENCE = _re(
    rf"我{_ADV_ZH}(?:喜欢(?!你[\s。！!~～]*$|您)|爱(?!你|您|人|上你)(?=[\u4e00-\u9fffA-Za-z])|偏好|偏爱|倾向于?|"
    r"习惯(?!了[\s。！!~～]*$)|讨厌|厌恶|反感|受不了|忍不了|接受不了|不喜欢|不太喜欢|不怎么喜欢|不大喜欢|不爱|不要(?!了|紧|再说)|不想(?:再)?用|"
    r"不用(?!了|谢|担心|客气|管)|不吃(?!了)|不喝(?!了)|不碰|不抽烟|只用|只吃|只喝|只看|只听|常用|爱用|宁愿|宁可|"
    r"吃不了|喝不了|最爱|更爱|钟爱|迷上了|爱上了)",
    r"我的(?:最爱|偏好|习惯|口味|爱好|兴趣爱好|兴趣)是?",
    # Chinese and English in one sentence, as people type: 我prefer简单的方案, 我比较like安静的地方.
    rf"我{_ADV_ZH}\s?(?=(?:prefer|like|love|enjoy|hate|dislike)(?![a-z]))",
    rf"我对(?={_NOT_END}{{1,12}}过敏)",
    r"我(?:一般|通常|平时|每天|每周|每次|习惯|总是|向来|一直)(?:都|会|是|就)?(?=用|喝|吃|早上|晚上|睡|起|穿|坐|开车|骑|听|看)",
    r"(?:以后|今后|从现在开始|从今以后|往后|下次|每次)(?:请|都|麻烦|你|就|也|给我)*"
    r"(?:用|别|不要|不用|少|多|尽量|统一|直接|默认|记得|回答|回复|说|写|叫我)",
    r"(?:请|麻烦你?)(?:都|一律|尽量)?用(?:中文|英文|日语|日文|简体|繁体|粤语)",
    r"\bi(?:\s+(?:really|just|much|generally|usually|strongly|absolutely|definitely|personally|also|still|do|"
    r"totally|kinda|kind of|truly|always|actually|mostly|honestly|genuinely|so|rather|slightly))*\s+"
    r"(?:like|love|prefer|enjoy|hate|dislike|loathe|detest|adore|favou?r)\b(?!\s+to\s+(?:ask|know|see|hear|check|"
    r"understand|learn more|get|confirm|clarify|add|mention|point out|say|share|thank|make sure|talk)\b)",
    r"\bi(?:'d| would)(?: much| really| definitely)? (?:rather|prefer)\b",
    r"\bi (?:can't|cannot|can not) stand\b|\bi(?:'m| am) (?:not )?(?:a )?(?:big |huge |massive )?fan of\b",
    r"\bi(?:'m| am) (?:really |very |not )?(?:into|allergic to|lactose intolerant|intolerant to)\b",
    r"\bi(?:'m| am) (?=(?:a |an )?(?:strict )?(?:vegetarian|vegan|pescatarian)\b)|我(?=吃素|是素食)",
    r"\b(?:i|we) (?:always|usually|normally|mostly|only|never|rarely|typically|generally|exclusively) "
    r"(?:use|drink|eat|write|"
    r"code|work|go|read|listen|watch|wear|take|pick|choose|run|deploy|buy|fly|sleep|wake)\b",
    r"\bi (?:don't|do not|never) (?:like|enjoy|use|eat|drink|want(?! to)|care for|touch)\b",
    r"\bmy (?:favou?rite|preferred|go-to|usual|default)\b",
    r"^(?:please,? )?(?:from now on|going forward|in (?:the )?future|next time|whenever possible),? (?:please )?"
    r"(?:always |never |don't |do not |just )?(?=(?:use|answer|reply|respond|write|call|give|keep|stop|avoid|be|"
    r"include|add|format|talk|speak|show|put|start|explain)\b)",
    r"^(?:please,? )?(?:always|never|don't ever|do not ever|stop|avoid) (?=(?:use|using|answer|reply|respond|write|"
    r"writing|give|giving|add|adding|include|including|call|put|start|end|format|say|saying|suggest|suggesting|"
    r"recommend|recommending|apologi[sz]e|apologi[sz]ing|repeat|repeating)\b)",
    r"\b(?:answer|reply|respond|write|talk|speak) (?:to me )?(?:only |always )?in (?:english|chinese|mandarin|"
    r"cantonese|japanese|korean|french|german|spanish|italian|portuguese|russian)\b",
)

_DECISION = _re(
    r"(?<![没未还不你您他她])(?<!没有|难以|无法|由你|你来|不能|很难)决定(?!因素|性|权|于|不了|吧|一下)",
    r"(?<![你您他她不])选(?:择)?了(?!吗|半天|很久|好久|一下)",
    r"最终(?:决定|选择|选了|选定|用|采用|确定|还是|定为|定在|敲定)",
    r"(?<![不没未])确定(?:了)?(?:用|采用|选|要用|就用|是用|下来)",
    r"(?:就|那就)(?:这样|这么)(?:吧|定了|办|决定)|(?:说|敲|拍板|就这么|就这样|那就这么|已经|都)定了|^定了",
    r"(?:^|[，,\s]|那|我们|我)就(?:用|选|按|定|买|上)(?!过)",
    r"(?:我们|我)(?:已经)?(?:改用|换成|换用|切换到|迁移到|转到|转用|迁到)",
    r"(?:我们|我)(?:打算|准备|计划)(?:用|采用|换成|改用|迁移到|切换到|买|选)",
    r"拍板|敲定|定下来",
    r"\b(?:i|we)(?:'ve| have)?(?: finally| just| already| now)? decided\b"
    r"(?!\s+(?:yet|whether|if|what|which|how|when)\b)",
    r"\b(?:i|we)(?:'ll| will| am going to|'m going to| are going to|'re going to| shall)(?: just| probably)? "
    r"(?:go with|use|stick with|pick|choose|switch to|move to|migrate to|adopt)\b",
    r"\blet's (?:go with|use|stick with|pick|choose|switch to|settle on|adopt|move to)\b",
    r"\b(?:i|we)(?:'ve| have)? (?:chose|picked|went with|settled on|opted for|committed to|switched to|moved to|"
    r"migrated to|"
    r"ended up (?:using|with|going with)|finalized|agreed on|agreed to use)\b",
    r"\b(?:final decision|decision|verdict|final answer|decided)\s*[:：]|\b(?:it's|that's|it is|that is) "
    r"(?:decided|settled|final)\b|\bthe plan is to\b",
)

_TODO = _re(
    r"(?:记得|你要|请|麻烦你?)?提醒(?:一下)?我(?!一下[？?]|什么|吗)",
    r"(?<![我他她])记得(?:要|去|把|给|帮|带|买|交|打|发|回|提醒|预约|更新|备份|续费|检查|吃药|拿|取|订|约|关|开|改|"
    r"写|做|还|缴)",
    r"(?:别|不要|千万别|千万不要)忘(?:了|记)(?!我|咱)(?=[\u4e00-\u9fffA-Za-z])",
    r"待办|代办事项|待处理|TODO\b|\bto-?do\s*[:：]",
    rf"我(?:们)?(?:{_WHEN_ZH})(?:之前|以前|前)?(?:还|一定|必须)?(?:要|得|必须|需要|准备|打算|记得|该|再|会|就)",
    rf"我(?:们)?(?:准备|打算|计划|得|要|必须)(?:在)?(?:{_WHEN_ZH})",
    rf"(?:^|[，,])(?:{_WHEN_ZH})(?:之前|以前|前)?(?:要|得|必须|记得)(?:交|提交|完成|发|还|买|去|做|开会|打|回|准备|"
    r"看|写|改|约|订|缴|续|开)",
    rf"(?:需要|必须|得|要)在{_NOT_END}{{1,15}}(?:之前|以前|前)(?=[\u4e00-\u9fffA-Za-z])",
    r"截止(?:日期|时间)|\bddl\b",
    r"\bremind me\b(?!\s+(?:what|how|why|who|where|which|of what|again what|about what)\b)",
    r"\b(?:don't|do not|never) (?:let me )?forget(?: to)?\b(?!\s*(?:that|this|about|[,:：，]|i\b|i'm|my|we|our))"
    r"(?=\s*\S)|\bremember to\b",
    r"\b(?:todo|to-do|action items?)\s*[:：-]|\b(?:my|the) (?:todo|to-do) list\b",
    rf"\b(?:i|we) (?:(?:need|have|has|'ve got|got|'ll need|'ll have) to|must|should|gotta)\b"
    rf"(?=[^.!?;]{{1,60}}?\b(?:{_WHEN_EN})\b)",
    r"\b(?:i|we)(?:'m| am|'re| are) going to\b(?=[^.!?;]{1,60}?\b(?:tomorrow|tonight|next (?:week|month)|"
    r"this (?:weekend|afternoon|evening))\b)",
    rf"\b(?:due|deadline)\b(?=[^.!?;]{{0,30}}?\b(?:by|on|is|tomorrow|tonight|{_WEEKDAYS}|\d))",
)

_IMPORTANT_FACT = _re(
    r"(?<!不)(?<!不太)重要[：:!！]|(?:很|非常|特别|超级|十分)重要[：:，,!！]|最重要的是|务必|切记|千万(?:要|别|不要)",
    r"一定要记住|注意[：:]|划重点|敲黑板|强调一下|特别注意",
    r"\bimportant\s*[:!]|\b(?:this|it|that)(?:'s| is) (?:very |really |super |extremely |critically )?important\b",
    r"\bcrucial(?:ly)?\b|\bnote:\s|\bheads[- ]up\b|\bmake sure (?:to|that|you)\b",
    r"\bnever ever\b|\bunder no circumstances\b",
)

_IMPORTANT_INSIGHT = _re(
    r"关键(?:是|在于|点是|点在于)|核心(?:是|在于)|本质上|根本上|说到底|归根结底|重点(?:是|在于)",
    r"\bthe (?:key|main|crucial|core|most important|real|important|big|central) (?:point|thing|insight|takeaway|"
    r"lesson|idea|issue|problem|difference|question|factor)(?: here)? (?:is|was)\b",
    r"\bessentially\b|\bfundamentally\b|\bat (?:its|the) core\b|\bbottom line\b|\bin essence\b",
    r"\bkey takeaway\b|\bwhat matters (?:most )?is\b",
)

# In priority order: the first kind that matches a sentence is its signal.
RULES: tuple[Rule, ...] = (
    Rule("correction", "correction", _CORRECTION),
    Rule("identity", "identity", _IDENTITY),
    Rule("relationship", "relationship", _RELATIONSHIP),
    Rule("preference", "preference", _PREFERENCE),
    Rule("decision", "decision", _DECISION),
    Rule("todo", "todo", _TODO),
    Rule("important", "fact", _IMPORTANT_FACT),
    Rule("important", "insight", _IMPORTANT_INSIGHT),
)

# The forced instruction. Chinese: anywhere, unless the user is the one remembering.
ZH_FORCED = _re(
    r"(?:帮我|给我|替我)?(?:记住|记下|记一下|记好|记着|牢记|记录一下|记录下来|请记录|帮我记录|记到|别忘了|别忘记|不要忘了|"
    r"不要忘记|千万别忘了?)|帮我记(?![得忆])"
)
ZH_FORCED_NOT_AN_ORDER = _re(r"(?:记住|记下|记好)了(?=[\s。！!~～，,]*$)|记住了吗|记下了吗")
# English: only at the start of a clause, so "I remember when…" and "do you remember" stay out.
EN_FORCED = _re(
    r"(?:^|[,;:—–-]\s*|\b(?:and|also|oh|ok|okay|so|btw|but|just|hey)\s+)"
    r"(?:please\s+|pls\s+|kindly\s+|always\s+|just\s+|(?:can|could|would|will) you(?: please)?\s+)?"
    r"(?:remember(?:\s+(?:that|this|these|the following|to|my|i|i'm|we|our|the|me as)\b|\s*[:：,-]"
    r"|\s+(?=[\u4e00-\u9fff]))"
    r"|(?:don't|do not|never) forget\b|note(?: that\b|\s*[:：])|(?:note|write|jot) (?:this |that |it )?down\b"
    r"|take note\b|make a note\b|keep in mind\b"
    r"|bear in mind\b|memori[sz]e\b|commit (?:this|it|that) to memory\b|for future reference\b|for the record\b)"
)
# Emphasis counts as an instruction to remember (seed 002: the user stresses that something matters,
# or says it will be needed later): 这个很重要：…, 以后会用到：…, "this is important: …", "I'll need
# this later". Only as a label (before a colon) or as the end of the sentence, so "it's important to
# eat well" and 重要的是… (an insight) stay out.
EMPHASIS = _re(
    r"(?<![不没])(?<!不太)(?<!没那么)(?:很|非常|特别|十分|超级|极其|最)?重要(?:的(?:事|一点|信息|东西))?\s*[：:!！]",
    r"(?:这个|这|这点|这一点|这件事|这条|以上|上面的?)(?:很|非常|特别|十分|超级)重要(?=[\s。！!~～]*$)",
    r"(?:以后|将来|之后|后面|回头|日后)(?:可能|肯定|还|都|一定)?(?:会|要|得)?用(?:得)?[到上](?:的)?(?=\s*[：:]|[\s。！!~～]*$)",
    r"\b(?:this|it|that)(?:'s| is) (?:very |really |super |extremely |critically )?important(?=\s*[:!：]|[\s.!]*$)",
    r"^important\s*[:!：]|\bi(?:'ll| will)(?: probably| definitely)? need (?:this|it|that) later\b|\bfor later\s*[:：]",
)
# The emphasis at the start of a sentence, to see whether anything follows it (这个很重要。 alone
# stresses what comes next, as 记住： does).
EMPHASIS_PREFIX = _re(
    r"^(?:这个|这|这点|这一点|这件事|这条|以下|下面的?|以上|上面的?)?(?:很|非常|特别|十分|超级|最)?重要"
    r"(?:的(?:事|一点|信息|东西))?[\s：:!！。~～]*",
    r"^(?:这个|这些)?(?:以后|将来|之后|后面|回头|日后)(?:可能|肯定|还|都|一定)?(?:会|要|得)?用(?:得)?[到上](?:的)?[\s：:。!！~～]*",
    r"^(?:this|it|that)(?:'s| is) (?:very |really |super |extremely |critically )?important[\s:!：.]*",
    r"^important[\s:!：.]*",
    r"^i(?:'ll| will)(?: probably| definitely)? need (?:this|it|that) later[\s:：,.!-]*",
)
POLITE_REQUEST = _re(
    r"^(?:你)?(?:能|可以|能不能|可不可以|会)(?:帮我)?(?:记住|记下|记一下)",
    r"^(?:can|could|would|will) you(?: please)? "
    r"(?:remember|note|write down|jot down|keep in mind|make a note|memori[sz]e)\b",
)
# What to cut from the front of a forced sentence; "记住要…" and "remember to…" are kept whole.
FORCED_PREFIXES: tuple[LazyPattern, ...] = (
    _re(
        r"^(?:(?:请|麻烦)你?|你(?:要|得|一定要)?)?(?:能|可以|能不能|可不可以)?(?:帮我|给我|替我)?(?:一定要|务必|千万)?(?:好好)?"
        r"(?:记住|记下来?|记一下|记好了?|记着|牢记|记录一下|记录下来|请记录|记录|记到[^，,：:]{0,8}?里|帮我记)(?:一下)?"
        r"(?:这个|这件事|这一点|这些|以下(?:几点|内容|信息|几件事)?|下面(?:几点|的)?|几件事)?(?:吧)?(?!要)\s*[，,：:、]?\s*"
    ),
    _re(
        r"^(?:请|你)?(?:千万)?(?:别忘了|别忘记|不要忘了|不要忘记)(?:这个|这件事|这一点)?\s*(?:[，,：:、]\s*|(?=我|咱))"
    ),
    _re(
        r"^(?:(?:and|also|oh|ok|okay|so|btw|but|just|hey),?\s+)?"
        r"(?:please,?\s+|pls\s+|kindly\s+|always\s+|just\s+|(?:can|could|would|will) you(?: please)?\s+)?"
        r"(?:remember|(?:note|write|jot) (?:this |that |it )?down|note|take note(?: of)?|make a note(?: of)?"
        r"|keep in mind|bear in mind|memori[sz]e"
        r"|for future reference|for the record)"
        r"(?:\s+(?:that|this|these|the following|of this|of that))?(?!\s+to\b)(?:\s*[:：,，-]\s*|\s+)"
    ),
    # "don't forget" only before that/this or a pause: "don't forget 交房租" is the reminder itself.
    _re(
        r"^(?:(?:and|also|oh|ok|okay|so|btw|but|just|hey),?\s+)?(?:please,?\s+)?(?:don't|do not|never) forget"
        r"(?:\s+(?:that|this)\b\s*[:：,，-]?\s*|\s*[:：,，-]\s*)"
    ),
)
FILLER_PREFIX = _re(
    r"^(?:(?:对了|另外|还有|顺便说一?下|顺便提一?下|顺便|哦|噢|嗯+|啊|哈哈+|好的|好|那个|话说|其实吧)[，,、:：!！~～\s]+"
    r"|(?:btw|by the way|oh|also|and|ok|okay|hey|anyway|fyi|oh and)\b[,:]?\s+|(?:so|well),\s+)"
)
HYPOTHETICAL = _re(
    r"^(?:如果|假如|假设|假若|倘若|要是|若是|万一|设想|想象一下)",
    r"(?:如果|假如|(?<![主需重只])要是|假设|假若|倘若)(?:我|你)是",
    r"^(?:if|suppose|supposing|imagine|assuming|what if|in case|unless|hypothetically)\b",
    r"\bif (?:i|we) (?:were|was|had)\b|\bi wish\b|\bpretend\b",
)
# A decision that is not (yet) made, or made by someone else (他决定, 我老板决定).
NOT_OUR_DECISION = _re(
    r"不知道|还没想好|没想好|犹豫|纠结|拿不定|\b(?:not sure|undecided|can't decide|haven't decided|torn between)\b",
    rf"(?:他|她|它|他们|她们|老板|领导|上司|经理|公司|客户|别人|对方|{_REL_ZH})"
    r"(?:已经|最终|最后|还是|也|都|刚|刚刚)?(?:决定|选择|选了|定了|确定)",
)
# A 不是…而是 about the conversation itself, not about a fact: 我不是说你错了，而是我没解释清楚,
# 不是你的问题，是我没说清楚, "I'm not saying you're wrong, I just explained it badly".
NOT_A_CORRECTION = _re(
    r"不是(?:说(?:你|您)|这个意思|那个意思|这意思|你的(?:问题|错)|(?:在)?怪你|(?:在)?批评你|针对你|故意)|"
    r"没(?:有)?(?:解释|说|讲|表达|描述)(?:清楚|明白)",
    r"\b(?:not saying|didn't mean|did not mean|don't mean|do not mean)\b[^,.;!?]{0,20}\b(?:you|your)\b|"
    r"\bnot your fault\b|\b(?:explained|said|put) it (?:badly|poorly|wrong)\b",
)
OTHERS_SPEECH = _re(
    r"(?:他|她|他们|她们|别人|人家|大家|有人)(?:都)?(?:说|觉得|以为|认为|问|猜)",
    r"\b(?:he|she|they|people|someone|everyone|everybody|my \w+)\s+(?:says?|said|thinks?|thought|believes?|believed"
    r"|assumes?|assumed|asked|told me)\b",
)

_TAG = _re(
    r"[，,]\s*(?:好吗|好不好|行吗|行不行|可以吗|成吗|拜托了?|谢谢|ok|okay|alright|all right|will you|would you|please"
    r"|thanks|thank you|right)\s*[?？!！。.~～]*\s*$"
)
_QUESTION_END = lazy(r"(?:[?？]|[吗呢]|[什怎]么)[\s\"”’'」』)）~～]*$")
_EN_QUESTION_START = _re(
    r"^(?:do|does|did|are|is|am|was|were|can|could|would|will|shall|should|have|has|had|may|might)(?:n't)?\s+"
    r"(?:you|i|we|it|they|he|she|this|that|there|your|my|our)\b",
    r"^(?:what|which|who|whom|whose|where|when|why|how)(?:'s|\s+(?:do|does|did|is|are|was|were|can|could|would|will"
    r"|should|have|has|about|much|many)\b)",
)
_ZH_QUESTION_WORD = lazy(
    r"什么|怎么|为什么|为啥|哪|谁|几[个点号时天]|多少|是否|是不是|有没有|能不能|要不要|可不可以|会不会|对不对|好不好"
)


def strip_tag(sentence: str) -> str:
    """The sentence without a trailing tag question (…，好吗？ / …, ok?): that is politeness, not a
    question."""
    return _TAG.sub("", sentence)


def is_question(sentence: str) -> bool:
    return bool(_QUESTION_END.search(sentence) or _EN_QUESTION_START.match(sentence.lstrip()))


def statement(sentence: str) -> str | None:
    """What a sentence asserts: the sentence itself, or for a question the clauses before the
    question (我是做后端的，想问一下怎么学Rust？ asserts 我是做后端的); None when it only asks."""
    sentence = strip_tag(sentence)
    if not is_question(sentence):
        return sentence
    cut = max(sentence.rfind("，"), sentence.rfind(","))
    if cut > 0:
        head = sentence[:cut]
        if not is_question(head) and not _ZH_QUESTION_WORD.search(head):
            return head
    return None
