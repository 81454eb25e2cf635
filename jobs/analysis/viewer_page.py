"""The report's per-item viewer, its part of report/index.html: a section, its CSS and its vanilla JavaScript.

The data comes from report/viewer/ beside the page (jobs.analysis.item_viewer): index.js with the page, one
chunk of texts when an item is opened. Filters: benchmark, subset, model (and whether it got the item right,
wrong or partly: a judge's two orders), "models disagree" (the models' outcomes on the item differ), and a pair
of models (the items where their outcomes differ: a link of each row of the pairs table). The list shows the
matching item ids PAGE at a time; an opened item shows its data's fields and texts, every model's outcome and
row, and the rows' texts (a judge's raw answer per order).

For a browser test and perf/report_viewer_load.py, the script marks <body>: data-viewer-ready (the list is
drawn) with data-viewer-ready-ms (performance.now() then: since navigation began), and data-viewer-item (the
id of the item drawn) with data-viewer-open-ms (from the click to the drawn item, its chunk loaded).
"""
from __future__ import annotations

from collections.abc import Sequence
from html import escape

from jobs.analysis.item_viewer import FOLDER, INDEX

PAGE = 100
CSS = """#viewer .ctl{display:flex;flex-wrap:wrap;gap:.4em 1em;align-items:center;margin:.5em 0;font-size:13px}
#viewer .cols{display:flex;gap:1em;align-items:flex-start}#viewer .item{flex:1;min-width:0}
#viewer .list{flex:0 0 28em;max-height:90vh;overflow:auto;position:sticky;top:0}
#viewer .list td{white-space:normal}#viewer .list td:first-child{word-break:break-all}#viewer .list tr{cursor:pointer}
#viewer tr.open td,#viewer tr.sel td,#viewer div.sel{background:#e8f0fa}
#viewer pre{white-space:pre-wrap;word-break:break-word;max-height:16em;overflow:auto;background:#f8f8f8;
padding:.4em;margin:.2em 0 .6em;font-size:12px}#viewer h4{margin:.8em 0 .2em}#viewer .lbl{font-size:12px;color:#555}"""

JS = r"""(()=>{
const D=window.RAGJUDGE_ITEMS,root=document.getElementById('viewer'),body=document.body.dataset,PAGE=%PAGE%;
function el(tag,attrs,...kids){const e=document.createElement(tag);
for(const [k,v] of Object.entries(attrs||{})){if(k.startsWith('on'))e.addEventListener(k.slice(2),v);
else if(v!==null&&v!==false)e.setAttribute(k,v===true?'':v)}
for(const k of kids)if(k!==null&&k!==undefined)e.append(k instanceof Node?k:String(k));return e}
if(!D){root.append(el('p',{class:'note'},'The viewer data (%FOLDER%/%INDEX% beside this page) did not load.'));
body.viewerReady='missing';return}
const chunks={},waiting={},st={b:0,subset:-1,model:-1,result:'any',disagree:false,a:-1,c:-1,item:-1,shown:PAGE};
window.ragjudgeChunk=(key,data)=>{chunks[key]=data;(waiting[key]||[]).forEach(f=>f());delete waiting[key]};
const B=()=>D.benchmarks[st.b],show=v=>v===null||v===undefined?'-':String(v);
function stats(b){if(b.mean)return;const n=b.items.length,head=(b.items[0]||'').split('/')[0]+'/';
b.cut=b.items.every(i=>i.startsWith(head))?head.length:0;b.mean=new Float64Array(n);b.n=new Uint16Array(n);
b.dis=new Uint8Array(n);for(let i=0;i<n;i++){let lo=Infinity,hi=-Infinity,s=0,c=0;
for(const o of b.outcomes){const v=o[i];if(v===null)continue;s+=v;c++;if(v<lo)lo=v;if(v>hi)hi=v}
b.n[i]=c;b.mean[i]=c?s/c:NaN;b.dis[i]=hi>lo?1:0}}
function keep(b,i){if(st.subset>=0&&b.subset[i]!==st.subset)return false;if(st.disagree&&!b.dis[i])return false;
if(st.model>=0){const v=b.outcomes[st.model][i];if(v===null)return false;
if(st.result==='right'&&v!==1||st.result==='wrong'&&v!==0||st.result==='partly'&&(v===0||v===1))return false}
if(st.a>=0){const x=b.outcomes[st.a][i],y=b.outcomes[st.c][i];if(x===null||y===null||x===y)return false}
return true}
const opts=(names,first)=>[...(first?[el('option',{value:-1},first)]:[]),
...names.map((n,k)=>el('option',{value:k},n))];
const bSel=el('select',{id:'viewer-benchmark',onchange:()=>{st.b=+bSel.value;reset();build();draw()}},
...opts(D.benchmarks.map(b=>b.name))),
sSel=el('select',{id:'viewer-subset',onchange:()=>{st.subset=+sSel.value;draw()}}),
mSel=el('select',{id:'viewer-model',onchange:()=>{st.model=+mSel.value;rSel.disabled=st.model<0;draw()}}),
rSel=el('select',{id:'viewer-result',disabled:true,onchange:()=>{st.result=rSel.value;draw()}},
...[['any','any outcome'],['right','right'],['wrong','wrong'],['partly','partly right']]
.map(([v,t])=>el('option',{value:v},t))),
dBox=el('input',{type:'checkbox',id:'viewer-disagree',onchange:()=>{st.disagree=dBox.checked;draw()}}),
pair=el('span',{id:'viewer-pair'}),count=el('span',{id:'viewer-count'}),
list=el('tbody'),more=el('button',{type:'button',onclick:()=>{st.shown+=PAGE;draw(true)}},'more'),
panel=el('div',{class:'item',id:'viewer-item'},el('p',{class:'note'},'Click an item to open it.'));
root.append(el('div',{class:'ctl'},el('label',{},'benchmark ',bSel),el('label',{},'subset ',sSel),
el('label',{},'model ',mSel,' ',rSel),el('label',{},dBox,' models disagree'),pair,count),
el('div',{class:'cols'},el('div',{class:'list'},el('table',{id:'viewer-list'},list),more),panel));
function reset(){Object.assign(st,{subset:-1,model:-1,result:'any',a:-1,c:-1,item:-1,shown:PAGE})}
function build(){const b=B();stats(b);sSel.replaceChildren(...opts(b.subsets,'all subsets'));
mSel.replaceChildren(...opts(b.models.map((m,k)=>`${m} (${show(b.scores[k]===null?null:
Math.round(1000*b.scores[k])/10)})`),'all models'));bSel.value=st.b;sSel.value=st.subset;mSel.value=st.model;
rSel.value=st.result;rSel.disabled=st.model<0;dBox.checked=st.disagree}
function draw(keepShown){const b=B();if(!keepShown)st.shown=PAGE;const hits=[];
for(let i=0;i<b.items.length;i++)if(keep(b,i))hits.push(i);
pair.replaceChildren(...(st.a<0?[]:[`${b.models[st.a]} vs ${b.models[st.c]}: outcomes differ `,
el('button',{type:'button',onclick:()=>{st.a=st.c=-1;draw()}},'clear')]));
count.textContent=`${hits.length} of ${b.items.length} items`;
const cols=[...new Set([st.model,st.a,st.c])].filter(m=>m>=0);
const head=el('tr',{},el('th',{},'item'),el('th',{},'subset'),el('th',{},'mean'),
...cols.map(m=>el('th',{},b.models[m])));
list.replaceChildren(head,...hits.slice(0,st.shown).map(i=>el('tr',{'data-i':i,class:i===st.item?'open':null,
onclick:()=>open(i)},el('td',{title:b.items[i]},b.items[i].slice(b.cut)),el('td',{},b.subsets[b.subset[i]]),
el('td',{},isNaN(b.mean[i])?'-':(100*b.mean[i]).toFixed(0)+'%'),...cols.map(m=>el('td',{},show(b.outcomes[m][i]))))));
more.hidden=hits.length<=st.shown}
function load(key,then){if(chunks[key])return then();if(waiting[key])return waiting[key].push(then);
waiting[key]=[then];const s=el('script',{src:'%FOLDER_REL%/'+key+'.js'});
s.addEventListener('error',()=>{delete waiting[key];panel.replaceChildren(el('p',{class:'note'},
`%FOLDER_REL%/${key}.js (beside this page) did not load.`))});document.head.append(s)}
function open(i){const b=B(),t0=performance.now(),key=b.prefix+b.chunk[i];st.item=i;
list.querySelectorAll('tr.open').forEach(r=>r.classList.remove('open'));
const row=list.querySelector(`tr[data-i="${i}"]`);if(row)row.classList.add('open');
panel.replaceChildren(el('p',{class:'note'},'loading '+b.items[i]));
load(key,()=>{if(st.item!==i||B()!==b)return;item(b,i,chunks[key][b.items[i]]||{r:[]});
body.viewerItem=b.items[i];body.viewerOpenMs=(performance.now()-t0).toFixed(1)})}
const blocks=pairs=>pairs.map(([k,v])=>el('div',{},el('span',{class:'lbl'},k),el('pre',{},show(v))));
function item(b,i,e){const parts=[el('h3',{},b.items[i]),el('p',{class:'note'},`${b.name} · subset `+
`${b.subsets[b.subset[i]]} · ${b.n[i]} model${b.n[i]===1?'':'s'} scored it, mean outcome `+
(isNaN(b.mean[i])?'-':(100*b.mean[i]).toFixed(1)+'%'))];
if(b.problem)parts.push(el('p',{class:'note'},'Item texts unavailable: '+b.problem));
if(e.f&&e.f.length)parts.push(el('table',{},...e.f.map(([k,v])=>el('tr',{},el('th',{},k),el('td',{class:'l'},show(v))))));
if(e.t)parts.push(...blocks(e.t));
const names=[];for(const [,f] of e.r)for(const [k] of f)if(!names.includes(k))names.push(k);
const sel=m=>m===st.model||m===st.a||m===st.c?'sel':null;
parts.push(el('h4',{},'Models'),el('div',{class:'scroll'},el('table',{id:'viewer-models'},
el('tr',{},el('th',{},'model'),el('th',{},'outcome'),...names.map(n=>el('th',{},n))),
...b.models.flatMap((_,m)=>{const mine=e.r.filter(r=>r[0]===m);  // a model without a row (an ensemble): its outcome
return mine.length?mine:b.outcomes[m][i]===null?[]:[[m,[],[]]]}).map(([m,f])=>{const v=Object.fromEntries(f);
return el('tr',{class:sel(m)},el('td',{class:'l'},b.models[m],b.kinds[m]?el('small',{},' '+b.kinds[m]):null),
el('td',{},show(b.outcomes[m][i])),...names.map(n=>el('td',{},show(v[n]))))}))));
const raw=e.r.filter(r=>r[2].length);
if(raw.length)parts.push(el('h4',{},'Texts of the models'),...raw.map(([m,,t])=>el('div',{class:sel(m)},
el('b',{},b.models[m]),...blocks(t))));
panel.replaceChildren(...parts);if(panel.getBoundingClientRect().top<0)panel.scrollIntoView()}
function readHash(){if(!location.hash.startsWith('#items?'))return false;
const p=new URLSearchParams(location.hash.slice(7)),k=D.benchmarks.findIndex(b=>b.name===p.get('benchmark'));
st.b=Math.max(0,k);reset();const b=B(),find=(list,name)=>name===null?-1:list.indexOf(name);
st.subset=find(b.subsets,p.get('subset'));st.model=find(b.models,p.get('model'));st.disagree=p.has('disagree');
st.result=p.get('result')||'any';const a=find(b.models,p.get('a')),c=find(b.models,p.get('b'));
if(a>=0&&c>=0){st.a=a;st.c=c}st.item=find(b.items,p.get('item'));return true}
window.addEventListener('hashchange',()=>{if(!readHash())return;build();draw();if(st.item>=0)open(st.item);
document.getElementById('items').scrollIntoView()});
readHash();build();draw();if(st.item>=0)open(st.item);
body.viewerReadyMs=performance.now().toFixed(1);body.viewerReady='yes'})();"""


def viewer_section(notes: Sequence[str] = ()) -> str:
    """The viewer's section of index.html: its heading, `notes` (which benchmarks it holds only some items of),
    where the script draws it, and the two scripts."""
    folder = FOLDER.split("/", 1)[1]  # relative to report/index.html
    script = (JS.replace("%PAGE%", str(PAGE)).replace("%FOLDER_REL%", folder)
              .replace("%FOLDER%", FOLDER).replace("%INDEX%", INDEX))
    return ("<h2 id='items'>Items</h2><p class='note'>Every item of the run, with what each model made of it: "
            "filter by benchmark, subset, model and whether the models disagree; click an item to see its "
            "texts (read from the benchmark's data when the report was written), every model's outcome and "
            "row, and the texts the models wrote. The pairs tables link here with the items on which two "
            "models differ.</p>" + "".join(f"<p class='note'>{escape(note)}</p>" for note in notes)
            + f"<style>{CSS}</style><div id='viewer'></div>"
            f"<script src='{folder}/{INDEX}'></script><script>{script}</script>")
